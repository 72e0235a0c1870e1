"""What the bench scripts share: a timed run and the spread of its rounds."""
import statistics, subprocess


def timed(args):
    """Run `args` under GNU time: (wall s, peak RSS MB)."""
    res = subprocess.run(["/usr/bin/time", "-f", "%e %M", *args], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} failed: {res.stderr.strip()[-400:]}")
    wall, rss_kb = res.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss_kb) / 1024


def spread(values):
    """`median [min-max]` of some rounds' seconds."""
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"
