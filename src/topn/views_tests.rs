//! Tests of `views.rs`.

use super::*;

#[test]
fn views_are_a_set_within_the_window() {
    let v = Views::new(&[12, 6], 24).unwrap();
    assert_eq!(v, Views::new(&[6, 12], 24).unwrap());
    assert_eq!(v.iter().collect::<Vec<_>>(), vec![6, 12]);
    assert_eq!(v.to_string(), "VIEWS 6 12");
    assert_eq!(Views::NONE.to_string(), "");
    assert_eq!(
        Views::new(&[1], 24).unwrap_err().to_string(),
        "VIEWS must be integers between 2 and the key's WINDOW - 1 (23), got 1"
    );
    assert_eq!(
        Views::new(&[2], 2).unwrap_err().to_string(),
        "VIEWS needs a WINDOW of at least 3 (the key's WINDOW is 2)"
    );
    assert!(Views::new(&[24], 24)
        .unwrap_err()
        .to_string()
        .contains("(23), got 24"));
    assert!(Views::new(&[6, 6], 24)
        .unwrap_err()
        .to_string()
        .contains("6 twice"));
    assert!(Views::new(&[2, 3, 4, 5, 6, 7, 8, 9, 10], 24)
        .unwrap_err()
        .to_string()
        .contains("at most 8"));
    assert_eq!(Views::new(&[2, 3, 4, 5, 6, 7, 8, 9], 24).unwrap().len(), 8);
}
