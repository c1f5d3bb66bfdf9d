// Every element type, as inputs and as (CC) outputs, bool included.
use mdh::mdh;

mdh! {
    kernel all_types {
        inp(a: i8[N], b: i16[N], c: i32[N], d: i64[N], e: u8[N], f: u16[N],
            g: u32[N], h: u64[N], p: f32[N], q: f64[N], z: bool[N]),
        out(oa: i8[N], ob: i16[N], oc: i32[N], od: i64[N], oe: u8[N], of: u16[N],
            og: u32[N], oh: u64[N], op: f32[N], oq: f64[N], oz: bool[N], pos: bool[N]),
        out_view(oa: |i| (i), ob: |i| (i), oc: |i| (i), od: |i| (i), oe: |i| (i),
                 of: |i| (i), og: |i| (i), oh: |i| (i), op: |i| (i), oq: |i| (i),
                 oz: |i| (i), pos: |i| (i)),
        md_hom[N](|a, b, c, d, e, f, g, h, p, q, z| (
            -a, b + 1, c * 3, d - 5, e / 2, f % 7, g + 1, h * 2, p * 0.5, q.sqrt(), !z,
            a > 0 && (z || q > 3.0)
        ), (CC)),
        inp_view(a: |i| (i), b: |i| (i), c: |i| (i), d: |i| (i), e: |i| (i),
                 f: |i| (i), g: |i| (i), h: |i| (i), p: |i| (i), q: |i| (i),
                 z: |i| (i)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let a = vec![1i8, -2];
    let b = vec![10i16, 20];
    let c = vec![-3i32, 4];
    let d = vec![100i64, -100];
    let e = vec![9u8, 255];
    let f = vec![15u16, 70];
    let g = vec![0u32, 41];
    let h = vec![5u64, 1 << 40];
    let p = vec![1.0f32, -3.0];
    let q = vec![4.0f64, 9.0];
    let z = vec![false, true];
    let (mut oa, mut ob, mut oc, mut od) = (vec![0i8; 2], vec![0i16; 2], vec![0i32; 2], vec![0i64; 2]);
    let (mut oe, mut of, mut og, mut oh) = (vec![0u8; 2], vec![0u16; 2], vec![0u32; 2], vec![0u64; 2]);
    let (mut op, mut oq, mut oz, mut pos) = (vec![0f32; 2], vec![0f64; 2], vec![false; 2], vec![false; 2]);
    all_types::cpu(
        &a, &b, &c, &d, &e, &f, &g, &h, &p, &q, &z,
        &mut oa, &mut ob, &mut oc, &mut od, &mut oe, &mut of, &mut og, &mut oh, &mut op, &mut oq,
        &mut oz, &mut pos,
        all_types::Sizes { N: 2 },
    )?;
    assert_eq!(oa, vec![-1, 2]);
    assert_eq!(ob, vec![11, 21]);
    assert_eq!(oc, vec![-9, 12]);
    assert_eq!(od, vec![95, -105]);
    assert_eq!(oe, vec![4, 127]);
    assert_eq!(of, vec![1, 0]);
    assert_eq!(og, vec![1, 42]);
    assert_eq!(oh, vec![10, 1 << 41]);
    assert_eq!(op, vec![0.5, -1.5]);
    assert_eq!(oq, vec![2.0, 3.0]);
    assert_eq!(oz, vec![true, false]);
    // a > 0 && (z || q > 3): [1 > 0 && (false || 4 > 3), -2 > 0 && ...]
    assert_eq!(pos, vec![true, false]);
    Ok(())
}
