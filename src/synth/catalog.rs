//! Static catalogs of the synthetic workload: kernels, CPU ops, callback ids, names.

/// Kernel families; they set duration ranges and launch shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KClass {
    Elem,
    Gemm,
    Norm,
    Reduce,
    Attn,
    Optim,
    Triton,
    Nccl,
}

impl KClass {
    /// Duration range in ns.
    pub fn dur_ns(self) -> (i64, i64) {
        match self {
            KClass::Elem => (1_800, 28_000),
            KClass::Gemm => (18_000, 380_000),
            KClass::Norm => (4_000, 42_000),
            KClass::Reduce => (3_000, 55_000),
            KClass::Attn => (60_000, 620_000),
            KClass::Optim => (25_000, 310_000),
            KClass::Triton => (3_000, 85_000),
            KClass::Nccl => (30_000, 1_900_000),
        }
    }
}

/// A kernel: name, family, grid/block, registers, static and dynamic shared memory.
pub struct KernelDef {
    pub name: &'static str,
    pub class: KClass,
    pub grid: [i64; 3],
    pub block: [i64; 3],
    pub regs: i64,
    pub smem: (i64, i64),
    /// Collective descriptor JSON (`metadata` column) for NCCL kernels.
    pub meta: Option<&'static str>,
}

const fn k(
    name: &'static str,
    class: KClass,
    grid: [i64; 3],
    block: [i64; 3],
    regs: i64,
    smem: (i64, i64),
) -> KernelDef {
    KernelDef {
        name,
        class,
        grid,
        block,
        regs,
        smem,
        meta: None,
    }
}

const fn nccl(name: &'static str, meta: &'static str) -> KernelDef {
    KernelDef {
        name,
        class: KClass::Nccl,
        grid: [2, 1, 1],
        block: [640, 1, 1],
        regs: 96,
        smem: (0, 4352),
        meta: Some(meta),
    }
}

use KClass::{Attn, Elem, Gemm, Norm, Optim, Reduce, Triton};

pub static KERNELS: &[KernelDef] = &[
    /* 0 */ k("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)", Elem, [1024, 1, 1], [128, 1, 1], 26, (0, 0)),
    /* 1 */ k("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)", Elem, [2048, 1, 1], [128, 1, 1], 30, (0, 0)),
    /* 2 */ k("void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}, at::detail::Array<char*, 3>)", Elem, [2048, 1, 1], [128, 1, 1], 32, (0, 0)),
    /* 3 */ k("ampere_sgemm_128x64_tn", Gemm, [16, 32, 1], [128, 1, 1], 122, (12544, 0)),
    /* 4 */ k("ampere_sgemm_64x32_sliced1x4_nn", Gemm, [32, 16, 2], [128, 1, 1], 86, (8192, 0)),
    /* 5 */ k("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", Gemm, [132, 1, 1], [384, 1, 1], 168, (0, 213_248)),
    /* 6 */ k("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4>(cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4::Params)", Gemm, [8, 16, 1], [256, 1, 1], 254, (0, 65_536)),
    /* 7 */ k("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)", Norm, [4096, 1, 1], [256, 1, 1], 40, (0, 0)),
    /* 8 */ k("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, float>(float const*, float const*, float const*, float const*, float const*, float*, int)", Norm, [4096, 1, 1], [256, 1, 1], 48, (0, 2048)),
    /* 9 */ k("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<float, float>(long, long, float const*, float const*, float const*, float const*, float*, float*)", Norm, [24, 1, 1], [32, 32, 1], 64, (8448, 0)),
    /* 10 */ k("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", Reduce, [4096, 1, 1], [512, 1, 1], 38, (0, 64)),
    /* 11 */ k("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxBackwardEpilogue>(float*, float const*, float const*, long)", Reduce, [4096, 1, 1], [512, 1, 1], 40, (0, 64)),
    /* 12 */ k("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)", Reduce, [264, 1, 1], [32, 16, 1], 32, (16, 0)),
    /* 13 */ k("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)", Elem, [512, 1, 1], [128, 1, 1], 28, (0, 0)),
    /* 14 */ k("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)", Elem, [1024, 1, 1], [128, 1, 1], 24, (0, 0)),
    /* 15 */ k("void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)", Elem, [1056, 1, 1], [128, 1, 1], 30, (0, 0)),
    /* 16 */ k("void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>(long const*, float const*, float*, int, long, int, int)", Reduce, [96, 1, 1], [32, 32, 1], 56, (0, 12288)),
    /* 17 */ k("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false, false>(FLASH_NAMESPACE::Flash_fwd_params)", Attn, [16, 32, 8], [128, 1, 1], 255, (0, 49_152)),
    /* 18 */ k("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, true, false, false, false, false, false>(FLASH_NAMESPACE::Flash_bwd_params)", Attn, [32, 8, 32], [256, 1, 1], 255, (0, 147_456)),
    /* 19 */ k("void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, false>(FLASH_NAMESPACE::Flash_bwd_params, int)", Elem, [32, 8, 32], [256, 1, 1], 62, (0, 24_576)),
    /* 20 */ k("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, double, double, double, double, bool, float*, float*>(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, double, double, double, double, bool, float*, float*)", Optim, [320, 1, 1], [512, 1, 1], 72, (0, 0)),
    /* 21 */ k("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::ZeroFunctor<float, 1, 1, 0> >(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::ZeroFunctor<float, 1, 1, 0>)", Optim, [148, 1, 1], [512, 1, 1], 20, (0, 0)),
    /* 22 */ k("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", Elem, [256, 1, 1], [128, 1, 1], 16, (0, 0)),
    /* 23 */ k("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)", Reduce, [1, 1, 1], [32, 1, 1], 32, (1024, 0)),
    /* 24 */ k("void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)", Reduce, [1, 1, 1], [32, 1, 1], 24, (0, 0)),
    /* 25 */ k("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, false, false, false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, float*, int*, float const*, float const*)", Reduce, [16, 24, 1], [32, 16, 1], 38, (0, 0)),
    /* 26 */ k("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)", Elem, [528, 1, 1], [256, 1, 1], 34, (0, 0)),
    /* 27 */ k("void at::native::_amp_update_scale_cuda_kernel<float>(float*, int*, float const*, double, double, int)", Elem, [1, 1, 1], [1, 1, 1], 16, (0, 0)),
    /* 28 */ k("triton_poi_fused_add_mul_0", Triton, [1024, 1, 1], [128, 1, 1], 22, (0, 0)),
    /* 29 */ k("triton_red_fused__softmax_1", Triton, [4096, 1, 1], [256, 1, 1], 40, (0, 0)),
    /* 30 */ k("triton_per_fused_native_layer_norm_2", Triton, [4096, 1, 1], [64, 1, 1], 36, (0, 0)),
    /* 31 */ k("triton_tem_fused_addmm_3", Triton, [256, 1, 1], [128, 1, 1], 168, (0, 98_304)),
    /* 32 */ nccl("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", r#"{"collective_name":"allreduce","group_size":2,"dtype":"Float","in_msg_nelems":2048}"#),
    /* 33 */ nccl("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", r#"{"collective_name":"_allgather_base","group_size":2,"dtype":"BFloat16","in_msg_nelems":65536}"#),
    /* 34 */ nccl("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", r#"{"collective_name":"_reduce_scatter_base","group_size":2,"dtype":"BFloat16","in_msg_nelems":131072}"#),
    /* 35 */ nccl("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", r#"{"collective_name":"broadcast","group_size":2,"dtype":"Float","in_msg_nelems":1}"#),
    /* 36 */ nccl("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", r#"{"collective_name":"send","group_size":2,"dtype":"BFloat16","in_msg_nelems":4096}"#),
    /* 37 */ k("void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 2, 128, 1>(at::native::(anonymous namespace)::OpaqueType<4u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", Elem, [264, 4, 1], [512, 1, 1], 32, (0, 0)),
];

/// One GPU action of a CPU op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Kernel launched through the runtime (cudaLaunchKernel).
    K(u16),
    /// Kernel launched through the driver (cuLaunchKernel / cuLaunchKernelEx) when enabled.
    Tri(u16),
    /// NCCL kernel on the communication stream.
    Nccl(u16),
    H2D,
    D2H,
    D2D,
    Memset,
    /// cudaStreamSynchronize on the compute stream.
    StreamSync,
}

use Step::{Memset, Nccl, StreamSync, Tri, D2D, D2H, H2D, K};

/// A Kineto cpu_op and what it launches.
pub struct OpDef {
    pub name: &'static str,
    pub steps: &'static [Step],
}

const fn op(name: &'static str, steps: &'static [Step]) -> OpDef {
    OpDef { name, steps }
}

pub static FORWARD_OPS: &[OpDef] = &[
    op("aten::embedding", &[K(15)]),
    op("aten::layer_norm", &[K(7)]),
    op("aten::linear", &[K(3), K(0)]),
    op("aten::addmm", &[K(5)]),
    op("aten::_scaled_dot_product_flash_attention", &[K(17)]),
    op("aten::gelu", &[K(1)]),
    op("aten::dropout", &[K(26)]),
    op("aten::add", &[K(0)]),
    op("aten::mul", &[K(14)]),
    op("aten::_softmax", &[K(10)]),
    op("aten::copy_", &[D2D]),
    op("aten::clone", &[D2D]),
    op("aten::zeros", &[Memset]),
    op("aten::cat", &[K(37)]),
];

pub static BACKWARD_OPS: &[OpDef] = &[
    op(
        "autograd::engine::evaluate_function: MmBackward0",
        &[K(4), K(6)],
    ),
    op("aten::mm", &[K(4)]),
    op("aten::native_layer_norm_backward", &[K(8), K(9)]),
    op("aten::gelu_backward", &[K(2)]),
    op("aten::_softmax_backward_data", &[K(11)]),
    op(
        "aten::_scaled_dot_product_flash_attention_backward",
        &[Memset, K(18), K(19)],
    ),
    op("aten::embedding_dense_backward", &[Memset, K(16)]),
    op("aten::sum", &[K(12)]),
    op("aten::add_", &[K(0)]),
    op("aten::nll_loss_backward", &[Memset, K(24)]),
    op("aten::addmm", &[K(5), K(25)]),
    op("aten::mul", &[K(14)]),
    op("aten::zero_", &[Memset]),
    op("aten::copy_", &[D2D]),
];

pub static OPTIMIZER_OPS: &[OpDef] = &[
    op("c10d::allreduce_", &[Nccl(32)]),
    op("aten::_amp_update_scale_", &[K(27)]),
    op("aten::_fused_adam_", &[K(20), K(20)]),
    op("aten::_foreach_zero_", &[K(21)]),
];

/// The input-batch copy at the start of an iteration and the loss readback at its end.
pub static LOAD_OP: OpDef = op("aten::to", &[H2D, H2D]);
pub static ITEM_OP: OpDef = op("aten::_local_scalar_dense", &[D2H, StreamSync]);
/// A torch.compile'd region (triton kernels, launched through the driver) and the loss.
pub static COMPILED_OP: OpDef = op("CompiledFunction", &[Tri(28), Tri(30), Tri(29), Tri(31)]);
pub static LOSS_OP: OpDef = op("aten::nll_loss_nd", &[K(23), K(12)]);
pub static ZERO_OP: OpDef = op("aten::zero_", &[Memset, K(22)]);

/// Runtime callback ids (cupti_runtime_cbid.h).
pub mod rt {
    pub const PEEK_AT_LAST_ERROR: i64 = 11;
    pub const GET_DEVICE: i64 = 17;
    pub const MEMCPY_ASYNC: i64 = 41;
    pub const MEMSET_ASYNC: i64 = 51;
    pub const STREAM_SYNCHRONIZE: i64 = 131;
    pub const EVENT_CREATE_WITH_FLAGS: i64 = 134;
    pub const EVENT_RECORD: i64 = 135;
    pub const EVENT_SYNCHRONIZE: i64 = 137;
    pub const EVENT_QUERY: i64 = 138;
    pub const STREAM_WAIT_EVENT: i64 = 147;
    pub const DEVICE_SYNCHRONIZE: i64 = 165;
    pub const LAUNCH_KERNEL: i64 = 211;
    pub const GRAPH_LAUNCH: i64 = 311;
    pub const STREAM_IS_CAPTURING: i64 = 317;
    pub const LAUNCH_KERNEL_EX_C: i64 = 430;
}

/// Driver callback ids (cupti_driver_cbid.h).
pub mod drv {
    pub const LAUNCH_KERNEL: i64 = 307;
    pub const LAUNCH_KERNEL_EX: i64 = 652;
    pub const POINTER_GET_ATTRIBUTE: i64 = 310;
}

/// Runtime calls that launch nothing (noise), with relative weights folded in by repetition.
pub static NOISE_RT: &[i64] = &[
    rt::GET_DEVICE,
    rt::GET_DEVICE,
    rt::STREAM_IS_CAPTURING,
    rt::PEEK_AT_LAST_ERROR,
    rt::EVENT_CREATE_WITH_FLAGS,
];

/// Overhead kinds: (code, name).
pub static OVERHEADS: &[(i64, &str)] = &[
    (2 << 16, "Instrumentation"),
    (1 << 16, "Buffer Flush"),
    (3 << 16, "Resource"),
    (5 << 16, "Lazy Function Loading"),
    (1, "Driver Compiler"),
];
pub const ACTIVITY_BUFFER_REQUEST: (i64, &str) = (7 << 16, "Activity Buffer Request");

/// PM-sampling metric columns.
pub static PM_METRICS: &[&str] = &[
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "nvlrx__bytes.sum.per_second",
];

/// Graph host-node callbacks.
pub static HOST_FNS: &[(&str, i64)] = &[
    (
        "c10::cuda::CUDACachingAllocator::graph_host_free_cb",
        0x7f3a_b41c_2d40,
    ),
    (
        "torch::cuda::graphs::record_stream_host_callback",
        0x7f3a_b41c_3a10,
    ),
    ("my_host_callback", 0x7ffb_e89a_1c90),
];

/// Graph-node annotations (JSON text) and lane names.
pub static GRAPH_ANNOTATIONS: &[&str] = &[
    r#"[{"Process Group Name": "5", "In msg nelems": 2048}]"#,
    r#"{"stage": "fwd", "layer": 1}"#,
    r#"{"stage": "bwd", "layer": 3}"#,
    r#""region_b""#,
];
pub static LANE_NAMES: &[&str] = &["compute", "comm", "DP"];

pub const DEVICE_NAME: &str = "NVIDIA H100 80GB HBM3";
