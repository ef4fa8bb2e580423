/* A scan of PTX text for what the client needs before the daemon does the real work: each
 * .entry with its parameter layout (offset, size), and the module-scope .global/.const
 * variables laid out in one data segment with their initial bytes.  The layout rules are the
 * daemon's PTX loader's (gdevd/gpu/ptx/module.py): alignment = .align or element size,
 * offsets in declaration order.  Anything else in the text is left to the daemon. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

struct scan {
    const char *p, *end;
    char tok[256];
    struct ptx_info *out;
    char err[600];
};

/* Next token into s->tok: a word (.directive, name, number) or one punctuation character;
 * empty at the end.  Comments are skipped. */
static const char *next(struct scan *s)
{
    size_t n = 0;
    for (;;) {
        while (s->p < s->end && isspace((unsigned char)*s->p))
            s->p++;
        if (s->p + 1 < s->end && s->p[0] == '/' && s->p[1] == '/') {
            while (s->p < s->end && *s->p != '\n')
                s->p++;
        } else if (s->p + 1 < s->end && s->p[0] == '/' && s->p[1] == '*') {
            const char *e = strstr(s->p + 2, "*/");
            s->p = e && e < s->end ? e + 2 : s->end;
        } else {
            break;
        }
    }
    if (s->p < s->end && !(isalnum((unsigned char)*s->p) || strchr("._$%-+", *s->p))) {
        s->tok[n++] = *s->p++;
    } else {
        while (s->p < s->end && n < sizeof s->tok - 1
               && (isalnum((unsigned char)*s->p) || strchr("._$%", *s->p)
                   || ((*s->p == '-' || *s->p == '+') && (n == 0 || s->tok[n - 1] == 'e'))))
            s->tok[n++] = *s->p++;
    }
    s->tok[n] = '\0';
    return s->tok;
}

static unsigned type_size(const char *t)
{
    static const char *const sizes[] = {
        "b8 u8 s8 pred", "b16 u16 s16 f16 bf16", "b32 u32 s32 f32 f16x2 bf16x2", "b64 u64 s64 f64"};
    char word[16];
    snprintf(word, sizeof word, " %s ", t + 1);
    for (unsigned i = 0; i < 4; i++) {
        char list[64];
        snprintf(list, sizeof list, " %s ", sizes[i]);
        if (strstr(list, word))
            return 1u << i;
    }
    return 0;
}

/* A declaration's qualifiers, name and array dimensions; the token after them stays in tok. */
struct decl {
    char name[256], type[16];
    uint64_t align, elem, count;
};

static int declarator(struct scan *s, struct decl *d)
{
    d->align = 0;
    d->elem = 0;
    d->count = 1;
    uint64_t vec = 1;
    while (s->tok[0] == '.') {
        if (!strcmp(s->tok, ".align")) {
            d->align = strtoull(next(s), NULL, 0);
        } else if (!strncmp(s->tok, ".v", 2) && isdigit((unsigned char)s->tok[2])) {
            vec = strtoull(s->tok + 2, NULL, 10);
        } else if (type_size(s->tok)) {
            d->elem = type_size(s->tok);
            snprintf(d->type, sizeof d->type, "%s", s->tok + 1);
        }
        next(s); /* .ptr, state spaces and the like change nothing here */
    }
    if (!d->elem || !s->tok[0] || strchr("[]{}(),;=", s->tok[0])) {
        snprintf(s->err, sizeof s->err, "declaration without a type or name near '%s'", s->tok);
        return -1;
    }
    d->elem *= vec;
    snprintf(d->name, sizeof d->name, "%s", s->tok);
    while (!strcmp(next(s), "[")) {
        d->count *= strtoull(next(s), NULL, 0);
        if (strcmp(next(s), "]")) {
            snprintf(s->err, sizeof s->err, "%s: unbounded array", d->name);
            return -1;
        }
    }
    if (!d->align)
        d->align = d->elem;
    return 0;
}

static int entry(struct scan *s)
{
    struct ptx_info *o = s->out;
    struct CUfunc_st *f;
    uint32_t off = 0;

    o->funcs = realloc(o->funcs, (o->nfuncs + 1) * sizeof *o->funcs);
    f = memset(&o->funcs[o->nfuncs++], 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", next(s));
    f->bx = f->by = f->bz = 1;
    if (strcmp(next(s), "("))
        return 0; /* no parameters */
    for (next(s); strcmp(s->tok, ")") && s->tok[0]; ) {
        struct decl d;
        if (strcmp(s->tok, ".param") || (next(s), declarator(s, &d)) < 0 || f->nparams == MAX_PARAMS) {
            if (!s->err[0])
                snprintf(s->err, sizeof s->err, "%s: bad parameter list", f->name);
            return -1;
        }
        off = (off + (uint32_t)d.align - 1) / (uint32_t)d.align * (uint32_t)d.align;
        f->param_off[f->nparams] = off;
        f->param_size[f->nparams++] = (uint32_t)(d.elem * d.count);
        off += (uint32_t)(d.elem * d.count);
        if (!strcmp(s->tok, ","))
            next(s);
    }
    f->param_total = off;
    return 0;
}

/* One initializer value of element type `type` (size n) at dst. */
static int value(struct scan *s, const char *type, unsigned n, uint8_t *dst)
{
    const char *t = s->tok;
    if ((t[0] == '0' && (t[1] == 'f' || t[1] == 'F' || t[1] == 'd' || t[1] == 'D'))
        && strlen(t) > 2 && isxdigit((unsigned char)t[2])) {
        uint64_t bits = strtoull(t + 2, NULL, 16);
        memcpy(dst, &bits, n);
    } else if (type[0] == 'f' && (strchr(t, '.') || strchr(t, 'e')) && n >= 4) {
        double v = strtod(t, NULL);
        float f = (float)v;
        memcpy(dst, n == 8 ? (void *)&v : (void *)&f, n);
    } else if (isdigit((unsigned char)t[0]) || t[0] == '-' || t[0] == '+') {
        uint64_t v = t[0] == '-' ? (uint64_t)strtoll(t, NULL, 0) : strtoull(t, NULL, 0);
        if (type[0] == 'f') {
            double d = t[0] == '-' ? (double)(int64_t)v : (double)v;
            float f = (float)d;
            memcpy(dst, n == 8 ? (void *)&d : (void *)&f, n);
        } else {
            memcpy(dst, &v, n);
        }
    } else {
        snprintf(s->err, sizeof s->err, "initializer '%s' is not supported", t);
        return -1;
    }
    return 0;
}

static int initializer(struct scan *s, struct decl *d, uint8_t *img)
{
    char dot[20];
    int depth = 0;
    uint64_t i = 0;

    snprintf(dot, sizeof dot, ".%s", d->type);
    unsigned scalar = type_size(dot);
    uint64_t total = d->count * (d->elem / scalar);
    for (next(s); s->tok[0] && strcmp(s->tok, ";"); next(s)) {
        if (!strcmp(s->tok, "{")) {
            depth++;
        } else if (!strcmp(s->tok, "}")) {
            depth--;
        } else if (strcmp(s->tok, ",")) {
            if (i == total) {
                snprintf(s->err, sizeof s->err, "%s: too many initializers", d->name);
                return -1;
            }
            if (value(s, d->type, scalar, img + i++ * scalar) < 0)
                return -1;
        }
    }
    return depth ? -1 : 0;
}

static int variable(struct scan *s)
{
    struct ptx_info *o = s->out;
    struct decl d;
    next(s);
    if (declarator(s, &d) < 0)
        return -1;
    uint64_t size = d.elem * d.count;
    uint64_t off = (o->image_size + d.align - 1) / d.align * d.align;
    uint8_t *img = realloc(o->image, off + size + 1);
    if (!img)
        return -1;
    memset(img + o->image_size, 0, off + size - o->image_size);
    o->image = img;
    o->image_size = off + size;
    o->globals = realloc(o->globals, (o->nglobals + 1) * sizeof *o->globals);
    struct global_var *g = &o->globals[o->nglobals++];
    snprintf(g->name, sizeof g->name, "%s", d.name);
    g->offset = off;
    g->size = size;
    if (!strcmp(s->tok, "="))
        return initializer(s, &d, img + off);
    if (strcmp(s->tok, ";")) {
        snprintf(s->err, sizeof s->err, "%s: one variable per declaration, please", d.name);
        return -1;
    }
    return 0;
}

CUresult ptx_scan(const char *text, size_t len, struct ptx_info *out)
{
    struct scan s = {.p = text, .end = text + len, .out = out};
    int depth = 0, external = 0;
    memset(out, 0, sizeof *out);
    while (*next(&s)) {
        int err = 0;
        if (!strcmp(s.tok, "{")) {
            depth++;
        } else if (!strcmp(s.tok, "}")) {
            depth--;
        } else if (depth) {
            continue;
        } else if (!strcmp(s.tok, ".extern")) {
            external = 1;
            continue;
        } else if (!strcmp(s.tok, ".entry")) {
            err = entry(&s);
        } else if ((!strcmp(s.tok, ".global") || !strcmp(s.tok, ".const")) && !external) {
            err = variable(&s);
        }
        external = 0;
        if (err) {
            ptx_info_free(out);
            return cu_fail(CUDA_ERROR_INVALID_PTX, "PTX: %s", s.err[0] ? s.err : "malformed");
        }
    }
    if (!out->nfuncs && !out->nglobals && !strstr(text, ".version"))
        return cu_fail(CUDA_ERROR_INVALID_IMAGE, "not PTX text (no .version directive)");
    return CUDA_SUCCESS;
}

void ptx_info_free(struct ptx_info *info)
{
    free(info->funcs);
    free(info->globals);
    free(info->image);
    memset(info, 0, sizeof *info);
}
