#[tune::test(crat = "tune")]
fn with_key() {
    let x = 1;
}

#[tune::test]
fn with_return_type(n: usize) -> tune::Result<()> {
    Ok(())
}

fn main() {}
