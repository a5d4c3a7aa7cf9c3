//! ioctl command encoding (include/uapi/asm-generic/ioctl.h, as on x86):
//! bits 0-7 number, 8-15 type, 16-29 argument size, 30-31 direction.

/// Direction: no argument.
pub const IOC_NONE: u32 = 0;
/// Direction: user space writes the argument (the kernel reads it).
pub const IOC_WRITE: u32 = 1;
/// Direction: user space reads the argument (the kernel writes it).
pub const IOC_READ: u32 = 2;

const NR_SHIFT: u32 = 0;
const TYPE_SHIFT: u32 = 8;
const SIZE_SHIFT: u32 = 16;
const DIR_SHIFT: u32 = 30;
const SIZE_BITS: u32 = 14;

/// `_IOC(dir, ty, nr, size)`: a command number from its direction
/// (`IOC_*`), type byte, number and argument size in bytes.
pub const fn ioc(dir: u32, ty: u8, nr: u8, size: usize) -> u32 {
    assert!(
        size < (1 << SIZE_BITS),
        "ioctl argument too large to encode"
    );
    (dir << DIR_SHIFT)
        | ((size as u32) << SIZE_SHIFT)
        | ((ty as u32) << TYPE_SHIFT)
        | ((nr as u32) << NR_SHIFT)
}

/// `_IO(ty, nr)`: no argument.
pub const fn io(ty: u8, nr: u8) -> u32 {
    ioc(IOC_NONE, ty, nr, 0)
}

/// `_IOR(ty, nr, T)`: the kernel writes a `T` to user space.
pub const fn ior<T>(ty: u8, nr: u8) -> u32 {
    ioc(IOC_READ, ty, nr, core::mem::size_of::<T>())
}

/// `_IOW(ty, nr, T)`: the kernel reads a `T` from user space.
pub const fn iow<T>(ty: u8, nr: u8) -> u32 {
    ioc(IOC_WRITE, ty, nr, core::mem::size_of::<T>())
}

/// `_IOWR(ty, nr, T)`.
pub const fn iowr<T>(ty: u8, nr: u8) -> u32 {
    ioc(IOC_READ | IOC_WRITE, ty, nr, core::mem::size_of::<T>())
}

/// The argument size encoded in a command.
pub const fn size_of_cmd(cmd: u32) -> usize {
    ((cmd >> SIZE_SHIFT) & ((1 << SIZE_BITS) - 1)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_c_macros() {
        // Values of the C macros for well-known commands.
        assert_eq!(io(0x12, 95), 0x125f); // BLKRRPART
        assert_eq!(ior::<u32>(b'T', 0x30), 0x8004_5430); // TIOCGPTN
        assert_eq!(iow::<i32>(b'T', 0x31), 0x4004_5431); // TIOCSPTLCK
        assert_eq!(iowr::<u64>(0xCF, 1), 0xC008_CF01);
        assert_eq!(size_of_cmd(ior::<[u8; 24]>(1, 2)), 24);
    }
}
