"""What the language's values are on NumPy, independently of running a kernel: how each element type is held,
rounded, converted and read as bits (`storage`), the fp8 formats (`fp8`) and every libdevice function
(`libdevice`, the NumPy column of `language/extra/libdevice.py`'s catalogue; the math functions' own is in
`language/catalogue.py`).

The interpreter's evaluation of IR ops (`interpreter/evaluate*.py`) computes with these; tests use them as
references (fp8 decoding).
"""
