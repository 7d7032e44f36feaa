# The C kernel of drawn permutation splits (_splits.c): its one function, typed for mypy.
from array import array

def yuen_statistics(
    values: array[float],
    squares: array[float],
    sums: array[float],
    square_sums: array[float],
    n: int,
    trim: float,
    n_condition: int,
    state: tuple[int, ...],
    count: int,
) -> tuple[bytes, tuple[int, ...]]: ...
