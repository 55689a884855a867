fn main() {
    let _ = tune::space! {
        A: u32 in [1, 2, 4, 8] step 2;
        B: u32 in [];
    };
}
