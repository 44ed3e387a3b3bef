"""Operation codes the kernels dispatch on.  They are the kernels' own (the op modules import them from
here), and importing this module loads no Numba."""

# Binary elementwise ops (irnorm.kernels.elementwise.binary).
ADD, SUB, MUL, DIV, MAX, MIN, POW, SQDIFF = range(8)
# Unary elementwise ops (irnorm.kernels.elementwise.unary).
SQRT, ABS, NEG, EXP, LOG, ERF, SIGMOID, TANH = range(8)
# Reductions (irnorm.kernels.reduce).
REDUCE_SUM, REDUCE_SUMSQ, REDUCE_MAX = range(3)
