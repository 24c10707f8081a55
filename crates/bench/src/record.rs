//! One CSV row per run, written as soon as the run ends (so a stopped
//! grid keeps what it measured) and read back for `--resume` and reports.

use crate::error::BenchError;
use crate::grid::{fmt_num, Cell, Implementation, Network};
use std::fmt;
use std::io::Write;
use std::path::Path;

pub const HEADER: &str = "implementation,delay_ms,loss_pct,size,rep,status,rtt_us,mb_per_s,congestion_control,seconds,note";

/// How a run ended. Every cell gets one; none is left out of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// The program or its launcher failed, or printed no result.
    Failed,
    /// Ended at the per-run time limit.
    Timeout,
    /// Not run: the implementation cannot run here (transport unknown to the
    /// runtime, MPI not installed).
    Skipped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::Skipped => "skipped",
        }
    }
    fn parse(s: &str) -> Option<Status> {
        [Status::Ok, Status::Failed, Status::Timeout, Status::Skipped].into_iter().find(|x| x.as_str() == s)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub cell: Cell,
    pub status: Status,
    /// Round-trip time reported by the program, µs.
    pub rtt_us: Option<f64>,
    pub mb_per_s: Option<f64>,
    /// TCP congestion control inside the emulated hosts during the run.
    pub cc: String,
    /// Wall time of the whole run (launch included).
    pub seconds: f64,
    /// Why it failed or was skipped (one line, no commas).
    pub note: String,
}

fn clean(s: &str) -> String {
    s.chars().map(|c| if c == ',' || c == '\n' || c == '\r' || c == '"' { ' ' } else { c }).collect::<String>().trim().to_string()
}

impl Row {
    pub fn to_line(&self) -> String {
        let opt = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or_default();
        format!(
            "{},{},{},{},{},{},{},{},{},{:.2},{}",
            self.cell.implementation,
            fmt_num(self.cell.net.delay_ms),
            fmt_num(self.cell.net.loss_pct),
            self.cell.size,
            self.cell.rep,
            self.status,
            opt(self.rtt_us),
            opt(self.mb_per_s),
            clean(&self.cc),
            self.seconds,
            clean(&self.note)
        )
    }

    pub fn parse_line(line: &str) -> Result<Row, String> {
        let f: Vec<&str> = line.splitn(11, ',').collect();
        if f.len() != 11 {
            return Err(format!("expected 11 fields, found {}", f.len()));
        }
        let num = |i: usize, what: &str| f[i].parse::<f64>().map_err(|_| format!("{what} {:?} is not a number", f[i]));
        let opt = |i: usize, what: &str| if f[i].is_empty() { Ok(None) } else { num(i, what).map(Some) };
        let implementation = Implementation::parse(f[0]).map_err(|e| e.to_string())?;
        let cell = Cell {
            implementation,
            net: Network { delay_ms: num(1, "delay_ms")?, loss_pct: num(2, "loss_pct")? },
            size: f[3].parse().map_err(|_| format!("size {:?}", f[3]))?,
            rep: f[4].parse().map_err(|_| format!("rep {:?}", f[4]))?,
        };
        Ok(Row {
            cell,
            status: Status::parse(f[5]).ok_or_else(|| format!("status {:?}", f[5]))?,
            rtt_us: opt(6, "rtt_us")?,
            mb_per_s: opt(7, "mb_per_s")?,
            cc: f[8].to_string(),
            seconds: num(9, "seconds")?,
            note: f[10].to_string(),
        })
    }
}

/// Every row of a results file (header checked).
pub fn read(path: &Path) -> Result<Vec<Row>, BenchError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(format!("reading {name}"), e))?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if i == 0 {
            if line.trim() != HEADER {
                return Err(BenchError::Csv { file: name, line: 1, problem: format!("not a wanmpi bench file (header {line:?})") });
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        rows.push(Row::parse_line(line).map_err(|problem| BenchError::Csv { file: name.clone(), line: i + 1, problem })?);
    }
    Ok(rows)
}

/// Appends rows to a results file, writing the header to a new one.
pub struct Writer {
    file: std::fs::File,
    name: String,
}

impl Writer {
    pub fn open(path: &Path, append: bool) -> Result<Writer, BenchError> {
        let name = path.display().to_string();
        let exists = append && path.exists();
        let mut opts = std::fs::OpenOptions::new();
        opts.create(true);
        if exists {
            opts.append(true);
        } else {
            opts.write(true).truncate(true);
        }
        let mut file = opts.open(path).map_err(|e| BenchError::io(format!("opening {name}"), e))?;
        if !exists {
            writeln!(file, "{HEADER}").map_err(|e| BenchError::io(format!("writing {name}"), e))?;
        }
        Ok(Writer { file, name })
    }

    pub fn write(&mut self, row: &Row) -> Result<(), BenchError> {
        writeln!(self.file, "{}", row.to_line()).and_then(|_| self.file.flush()).map_err(|e| BenchError::io(format!("writing {}", self.name), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_and_bad_lines_are_named() {
        let row = Row {
            cell: Cell { implementation: Implementation::OpenMpi, net: Network { delay_ms: 20.0, loss_pct: 0.5 }, size: 30720, rep: 2 },
            status: Status::Timeout,
            rtt_us: None,
            mb_per_s: Some(1.5),
            cc: "bbr".into(),
            seconds: 60.0,
            note: "ran past 60 s, then, killed".into(),
        };
        let line = row.to_line();
        assert_eq!(line, "openmpi,20,0.5,30720,2,timeout,,1.500,bbr,60.00,ran past 60 s  then  killed");
        let back = Row::parse_line(&line).unwrap();
        assert_eq!((back.cell, back.status, back.rtt_us, back.mb_per_s), (row.cell, row.status, None, Some(1.5)));
        assert!(Row::parse_line("openmpi,20,x,1,0,ok,,,bbr,1,").unwrap_err().contains("loss_pct"));
        assert!(Row::parse_line("openmpi,20").is_err());
    }
}
