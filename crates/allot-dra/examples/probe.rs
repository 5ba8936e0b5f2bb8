use allot_dra::{CelCache, Outcome, Scenario};
#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap();
    let mut scenario = Scenario::parse(&std::fs::read_to_string(&path)?)?;
    if std::env::var("IDS").is_ok() {
        scenario.assign_identities();
    }
    let features = scenario.features()?;
    let node = scenario.node(None)?;
    let claims = scenario.claims_to_allocate()?;
    let allocated = scenario.allocated_claims(&claims);
    let input = scenario.input(node, &claims, &allocated);
    let cache = CelCache::default();
    if std::env::var("PARSEONLY").is_ok() {
        println!("{}", input.claims.len());
        return Ok(());
    }
    if std::env::var("COMPARE").is_ok() {
        let a = allot_dra::allocate_with_cache(&input, &features, &cache);
        let b = allot_dra::allocate_with_cache(&input, &features, &cache);
        let same = match (&a, &b) {
            (Ok(x), Ok(y)) => x == y,
            (Err(x), Err(y)) => x.to_string() == y.to_string(),
            _ => false,
        };
        if !same {
            println!("DIFF {path}\nA: {a:?}\nB: {b:?}");
        }
        return Ok(());
    }
    for _ in 0..2 {
        let start = std::time::Instant::now();
        let budget = allot_dra::Budget {
            max_steps: std::env::var("STEPS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(allot_dra::Budget::DEFAULT_STEPS),
            ..Default::default()
        };
        let out = allot_dra::allocate_within(&input, &features, &cache, &budget);
        let t = start.elapsed();
        match &out {
            Ok(Outcome::Allocated(_)) => println!("allocated in {t:?}"),
            Ok(Outcome::Unschedulable(e)) => println!("unschedulable in {t:?}\n{e}"),
            Ok(Outcome::GaveUp(g)) => println!("gave up in {t:?}: {g}"),
            Err(e) => println!("error in {t:?}: {e}"),
        }
    }
    if std::env::var("PLAIN").is_ok() {
        let start = std::time::Instant::now();
        let out = allot_dra::allocate_without_pruning(&input, &features);
        println!(
            "plain {:?}: {}",
            start.elapsed(),
            match &out {
                Ok(o) =>
                    if o.is_allocated() {
                        "allocated".into()
                    } else {
                        format!("{:?}", std::mem::discriminant(o))
                    },
                Err(e) => e.to_string(),
            }
        );
    }
    Ok(())
}
