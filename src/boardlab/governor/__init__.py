"""The DVFS lab of the governor study: OPP tables and an energy model, a big.LITTLE simulator, the snoop
sweep plan, t-test labels, a small decision tree exported to C, and a userspace governor daemon.

Nothing here imports numpy or scikit-learn: the board runs only the standard library.
"""
