// The example kernel, as mdh-example-kernels declares it.
include!("../../examples/kernels/src/matvec.rs");

#[test]
fn matvec_matches_a_loop() {
    for (i, k) in [(1, 1), (3, 7), (64, 1000), (5, 100_000)] {
        let m: Vec<f32> = (0..i * k).map(|x| (x % 7) as f32).collect();
        let v: Vec<f32> = (0..k).map(|x| (x % 5) as f32).collect();
        let mut w = vec![0.0; i];
        matvec::cpu(&m, &v, &mut w, matvec::Sizes { I: i, K: k }).unwrap();
        for r in 0..i {
            let want: f32 = (0..k).map(|c| m[r * k + c] * v[c]).sum();
            assert!(
                (w[r] - want).abs() <= 1e-4 * want.abs().max(1.0),
                "{r}: {} vs {want}",
                w[r]
            );
        }
    }
}
