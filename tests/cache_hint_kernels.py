"""A copy kernel for each cache modifier and eviction policy of tl.load and tl.store (shared by the NVRTC test
and the GPU test)."""
import transpiler
import transpiler.language as tl

LOAD_HINTS = [("", ""), (".ca", ""), (".cg", ""), (".cs", ""), (".cv", ""), (".lu", ""),
              ("", "evict_first"), ("", "evict_last"), (".cg", "evict_first"), ("", "evict_normal")]
STORE_HINTS = ["", ".cg", ".cs", ".wb", ".wt"]


@transpiler.jit
def hinted_copy(OUT, X, n, BLOCK: tl.constexpr, LOAD_CACHE: tl.constexpr, EVICT: tl.constexpr,
                STORE_CACHE: tl.constexpr, VOLATILE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    x = tl.load(X + offs, mask=valid, other=0.0, cache_modifier=LOAD_CACHE, eviction_policy=EVICT,
                volatile=VOLATILE)
    tl.store(OUT + offs, x * 2.0 + 1.0, mask=valid, cache_modifier=STORE_CACHE)


def cases():
    """(id, constexprs) of every load hint with the default store, and every store hint with a plain load."""
    out = [(f"load{cache or '-'}{evict or '-'}", dict(LOAD_CACHE=cache, EVICT=evict, STORE_CACHE="", VOLATILE=False))
           for cache, evict in LOAD_HINTS]
    out += [(f"store{cache or '-'}", dict(LOAD_CACHE="", EVICT="", STORE_CACHE=cache, VOLATILE=False))
            for cache in STORE_HINTS[1:]]
    out.append(("volatile", dict(LOAD_CACHE="", EVICT="", STORE_CACHE="", VOLATILE=True)))
    return out
