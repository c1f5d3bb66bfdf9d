// The kernel's config (ui/configs/config_wrong_gpu_plan.yaml, found through MDH_CONFIG_DIR,
// which tests/ui.rs sets) has a CUDA entry whose plan asks for more threads per
// block than CUDA allows: the error names the file, line and column.
use mdh::mdh;

mdh! {
    kernel config_wrong_gpu_plan {
        inp(A: f32[I, K], B: f32[K, J]),
        out(C: f32[I, J]),
        out_view(C: |i, j, k| (i, j)),
        md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
    }
}

fn main() {}
