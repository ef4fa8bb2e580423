"""Small PTX translation units that the link tests (tests/ptx/test_unitlink.py,
tests/runtime/test_linked_modules.py) link together."""

from __future__ import annotations

HEAD = ".version {v}\n.target {t}\n.address_size 64\n"


def unit(body: str, v: str = "7.5", t: str = "sm_75") -> str:
    return HEAD.format(v=v, t=t) + body


# a.ptx: kernel k calls extern twice(x) and bumps extern counter; kernel h calls its own
# internal helper (which adds 1)
A = unit("""
.extern .func (.param .b32 r) twice (.param .b32 x);
.extern .global .align 4 .u32 counter;
.func (.param .b32 r) helper (.param .b32 x)
{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [x];
    add.s32 %r2, %r1, 1;
    st.param.u32 [r], %r2;
    ret;
}
.visible .entry k (.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    cvt.rn.f32.u32 %f1, %r1;
    {
    .param .b32 p0;
    .param .b32 r0;
    st.param.f32 [p0], %f1;
    call.uni (r0), twice, (p0);
    ld.param.f32 %f2, [r0];
    }
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.f32 [%rd3], %f2;
    atom.global.add.u32 %r2, [counter], 1;
    ret;
}
.visible .entry h (.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    {
    .param .b32 p0;
    .param .b32 r0;
    st.param.u32 [p0], %r1;
    call.uni (r0), helper, (p0);
    ld.param.u32 %r2, [r0];
    }
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
""")

# b.ptx: defines twice and counter; kernel g reads counter plus its own helper (adds 2)
B = unit("""
.visible .global .align 4 .u32 counter = 100;
.visible .func (.param .b32 r) twice (.param .b32 x)
{
    .reg .f32 %f<3>;
    ld.param.f32 %f1, [x];
    add.f32 %f2, %f1, %f1;
    st.param.f32 [r], %f2;
    ret;
}
.func (.param .b32 r) helper (.param .b32 x)
{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [x];
    add.s32 %r2, %r1, 2;
    st.param.u32 [r], %r2;
    ret;
}
.visible .entry g (.param .u64 out)
{
    .reg .b32 %r<5>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    {
    .param .b32 p0;
    .param .b32 r0;
    st.param.u32 [p0], %r1;
    call.uni (r0), helper, (p0);
    ld.param.u32 %r2, [r0];
    }
    ld.global.u32 %r3, [counter];
    add.s32 %r4, %r2, %r3;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    ret;
}
""", v="8.0", t="sm_80")


VAL = """
{linkage} .func (.param .b32 r) val ()
{{
    .reg .b32 %r<2>;
    mov.u32 %r1, {value};
    st.param.u32 [r], %r1;
    ret;
}}
"""
USE_VAL = unit("""
.extern .func (.param .b32 r) val ();
.visible .entry use (.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    {
    .param .b32 r0;
    call.uni (r0), val, ();
    ld.param.u32 %r1, [r0];
    }
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
    ret;
}
""")
