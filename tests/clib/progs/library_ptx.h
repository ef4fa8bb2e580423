/* The PTX of the library tests (drv_library.c, rt_library.cu): a global `base` (5) and two
 * kernels, addbase(out, v): *out = v + base, and noop(). */
#ifndef LIBRARY_PTX_H
#define LIBRARY_PTX_H
static const char library_ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n\n"
    ".visible .global .align 4 .u32 base = 5;\n\n"
    ".visible .entry addbase(.param .u64 out, .param .u32 v)\n{\n"
    "    .reg .b64 %rd<3>;\n    .reg .b32 %r<4>;\n    ld.param.u64 %rd1, [out];\n"
    "    ld.param.u32 %r1, [v];\n    ld.global.u32 %r2, [base];\n    add.s32 %r3, %r1, %r2;\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n    st.global.u32 [%rd2], %r3;\n    ret;\n}\n\n"
    ".visible .entry noop()\n{\n    ret;\n}\n";
#endif
