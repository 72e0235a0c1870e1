-- _diff_call_op: the CPU op whose external id each call carries (cpu_launch): the innermost
-- (latest to start; of two that start together, the shorter) of them. Held: _diff_gpu_work
-- reads it twice (the op of each call, and the calls it leaves to their thread's ops).
CREATE OR REPLACE VIEW _diff_call_op AS
SELECT {{part}} correlation_id, arg_max(cpu_name, cpu_ts, -cpu_dur) AS cpu_op
FROM cpu_launch
GROUP BY {{part}} correlation_id
