"""XLA:CPU deadlock, the program alone (jax 0.10.2, 2 CPU cores).

Flax's orthogonal initialisers are QR decompositions; vmapped over keys they become
batched `lapack_sgeqrf_ffi` / `lapack_sorgqr_ffi` custom calls. jaxlib splits a batched
LAPACK call over XLA:CPU's intra-op thread pool (`jax::ParallelBatchMap`) and blocks until
the pieces are done; XLA:CPU's concurrency-optimized scheduler (on by default) starts
independent calls at once on that pool. With every pool thread blocked in one of them, no
thread is left to run the pieces: all threads park on a futex at 0% CPU (gdb: each pool
thread in `OrthogonalQr` -> `ParallelBatchMap` -> `BlockingCounter::Wait`).

    # hangs (exit 124) within 200 calls, with XLA's defaults:
    timeout 60 uv run python benchmarks/results/xla_cpu_deadlock.py
    # prints OK: the scheduler off for the whole process (costs up to 30% elsewhere)
    XLA_FLAGS=--xla_cpu_enable_concurrency_optimized_scheduler=false \\
        timeout 60 uv run python benchmarks/results/xla_cpu_deadlock.py
    # prints OK: the keys one after another (`lax.map`, Anakin's multi-seed init)
    timeout 60 uv run python benchmarks/results/xla_cpu_deadlock.py --map

The same option per program (`Lowered.compile(compiler_options={...: False})`) is accepted
but ignored by XLA:CPU in this jaxlib: the compiled HLO is identical to the default's and
the program still hangs, so Anakin restructures its init instead.
"""

import sys

import jax

init = jax.nn.initializers.orthogonal()


def layers(key):
    return [init(k, (64, 64)) for k in jax.random.split(key, 6)]


program = jax.jit(jax.vmap(layers))
if "--map" in sys.argv:
    program = jax.jit(lambda keys: jax.lax.map(layers, keys))
for r in range(200):
    jax.block_until_ready(program(jax.random.split(jax.random.PRNGKey(r), 3)))
print("OK")
