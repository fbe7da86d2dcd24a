//! Reading limits enforced while a data file is read, so that no file, FIFO or device grows
//! memory past them: the parsers buffer a token or a CSV record whole, so a run of bytes
//! without a separator — a 2 GB line of a sparse file, a string token that never closes — is
//! cut off with an error naming the file, before it is buffered.

use std::io::Read;

/// A reader that fails once more than `limit` bytes pass without one of the `breaks` bytes,
/// or once the file has given more bytes than the memory available could hold as numbers.
pub(super) struct RunLimit<R> {
    inner: R,
    breaks: &'static [u8],
    limit: usize,
    run: usize,
    what: &'static str,
    total: u64,
    most: u64,
}

/// The most bytes a data file may give: a number costs 8 bytes in memory and takes at least
/// two bytes of text (`1,`), so a quarter of the memory available bounds what reading can
/// allocate (a FIFO or device that streams numbers forever is cut off there).
fn most_bytes() -> u64 {
    gpm_runtime::memory::available().map_or(u64::MAX, |m| (m / 4).max(64 << 20))
}

/// The longest CSV line (a record), in bytes: a million columns of 64 characters.
pub(super) const CSV_LINE: usize = 64 << 20;
/// The longest JSON token (a number or a string), in bytes.
pub(super) const JSON_TOKEN: usize = 1 << 20;

impl<R: Read> RunLimit<R> {
    /// CSV: lines of at most [`CSV_LINE`] bytes.
    pub(super) fn csv(inner: R) -> Self {
        RunLimit {
            inner,
            breaks: b"\n",
            limit: CSV_LINE,
            run: 0,
            what: "a CSV line",
            total: 0,
            most: most_bytes(),
        }
    }

    /// JSON: tokens of at most [`JSON_TOKEN`] bytes between structural characters.
    pub(super) fn json(inner: R) -> Self {
        RunLimit {
            inner,
            breaks: b",:[]{}\n",
            limit: JSON_TOKEN,
            run: 0,
            what: "a JSON value",
            total: 0,
            most: most_bytes(),
        }
    }
}

impl<R: Read> Read for RunLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.total += n as u64;
        if self.total > self.most {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "more than {} of data, more than the memory available holds as numbers (a device or stream that never ends?)",
                    gpm_runtime::memory::human(self.most)
                ),
            ));
        }
        for &b in &buf[..n] {
            if self.breaks.contains(&b) {
                self.run = 0;
            } else {
                self.run += 1;
                if self.run > self.limit {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "{} longer than {} MB (not a data file, or a device or stream that never ends)",
                            self.what,
                            self.limit >> 20
                        ),
                    ));
                }
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_a_separator_is_cut_off_and_separated_text_passes() {
        let mut long = RunLimit::json(std::io::repeat(b'a').take(3 << 20));
        let e = std::io::copy(&mut long, &mut std::io::sink()).unwrap_err();
        assert!(
            e.to_string().contains("a JSON value longer than 1 MB"),
            "{e}"
        );
        let ok = "1,".repeat(1 << 20);
        let mut fine = RunLimit::json(ok.as_bytes());
        assert_eq!(
            std::io::copy(&mut fine, &mut std::io::sink()).unwrap(),
            ok.len() as u64
        );
        let mut zeros = RunLimit::csv(std::io::repeat(0).take((CSV_LINE + 10) as u64));
        assert!(std::io::copy(&mut zeros, &mut std::io::sink()).is_err());
    }
}
