// `pub(crate)` visibility and doc comments on the kernel.
mod kernels {
    use mdh::mdh;

    mdh! {
        /// Doubles every element.
        ///
        /// A second doc line.
        pub(crate) kernel double {
            inp(a: u16[N]),
            out(b: u16[N]),
            out_view(b: |i| (i)),
            md_hom[N](|x| x * 2, (CC)),
            inp_view(a: |i| (i)),
        }
    }
}

fn main() -> Result<(), mdh::Error> {
    let a = vec![1u16, 2, 300];
    let mut b = vec![0u16; 3];
    kernels::double::cpu(&a, &mut b, kernels::double::Sizes { N: 3 })?;
    assert_eq!(b, vec![2, 4, 600]);
    Ok(())
}
