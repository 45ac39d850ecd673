"""The architecture check of `.ci/check-architecture` (see its docstring): the Rust
lexing (`rust`), ARCHITECTURE.md's blocks and the checks (`graph`), the command line
(`cli`) and the self-test on fixture trees (`selftest`). Python 3 standard library only."""
