/* memcpy, memmove and memset on WebAssembly's bulk memory instructions.
 *
 * Debian's wasi-libc (2022) copies and fills memory with C loops. Built with
 * -mbulk-memory, __builtin_memcpy and friends become single memory.copy /
 * memory.fill instructions, which wazero runs as native memmove/memset.
 * Short blocks keep a plain loop: an instruction with bounds checks costs
 * more than copying a few bytes. Linked ahead of libc (these objects come
 * in with libpython), so every caller in the interpreter uses them.
 */
#include <stddef.h>
#include <stdint.h>

#define BULK_THRESHOLD 32

void *memcpy(void *restrict dest, const void *restrict src, size_t n)
{
    if (n >= BULK_THRESHOLD) {
        return __builtin_memcpy(dest, src, n);
    }
    unsigned char *d = dest;
    const unsigned char *s = src;
    while (n--) {
        *d++ = *s++;
    }
    return dest;
}

void *memmove(void *dest, const void *src, size_t n)
{
    if (n >= BULK_THRESHOLD) {
        return __builtin_memmove(dest, src, n);
    }
    unsigned char *d = dest;
    const unsigned char *s = src;
    if (d < s) {
        while (n--) {
            *d++ = *s++;
        }
    } else {
        d += n;
        s += n;
        while (n--) {
            *--d = *--s;
        }
    }
    return dest;
}

void *memset(void *dest, int c, size_t n)
{
    if (n >= BULK_THRESHOLD) {
        return __builtin_memset(dest, c, n);
    }
    unsigned char *d = dest;
    while (n--) {
        *d++ = (unsigned char)c;
    }
    return dest;
}
