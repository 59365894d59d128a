/**
 * Output of the CLI: plain text for people, `--json` for scripts, and
 * progress bars on a terminal only (stderr is a TTY), quiet otherwise.
 */
import { SingleBar, Presets } from 'cli-progress'
import type { Writable } from 'node:stream'

/** Where a command writes. Tests pass their own streams. */
export interface Io {
  readonly stdout: Writable
  readonly stderr: Writable
  /** Show progress bars (default: stderr is a TTY). */
  readonly progress?: boolean
  /** A person can answer a question (stdin and stderr are terminals): commands that delete ask first. */
  readonly interactive?: boolean
}

/** The process's own streams. */
export function processIo(): Io {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    progress: process.stderr.isTTY === true,
    interactive: process.stdin.isTTY === true && process.stderr.isTTY === true,
  }
}

/** A progress reporter: a bar on a TTY, nothing otherwise. */
export interface Progress {
  tick(label?: string): void
  stop(): void
}

/** Writes results as text or JSON. */
export class Output {
  constructor(
    readonly io: Io,
    readonly json: boolean,
  ) {}

  /** One line of text (ignored in JSON mode). */
  line(text = ''): void {
    if (!this.json) this.io.stdout.write(`${text}\n`)
  }

  /** The result: JSON when `--json`, else the text `render` gives. */
  result(value: unknown, render: () => string): void {
    if (this.json) this.io.stdout.write(`${JSON.stringify(value, jsonReplacer)}\n`)
    else {
      const text = render()
      if (text.length > 0) this.io.stdout.write(text.endsWith('\n') ? text : `${text}\n`)
    }
  }

  /** A note on stderr (never pollutes stdout, so piping stays clean). */
  note(text: string): void {
    this.io.stderr.write(`${text}\n`)
  }

  /** A progress bar over `total` steps, on a TTY only, and only for long work. */
  progress(total: number, title: string): Progress {
    if (!this.io.progress || total < 2) return { tick() {}, stop() {} }
    const bar = new SingleBar(
      {
        format: `${title} [{bar}] {value}/{total} {label}`,
        stream: this.io.stderr as NodeJS.WriteStream,
        clearOnComplete: true,
        hideCursor: true,
      },
      Presets.shades_classic,
    )
    bar.start(total, 0, { label: '' })
    return {
      tick: (label = '') => bar.increment(1, { label }),
      stop: () => bar.stop(),
    }
  }
}

/** JSON.stringify replacer: bytes as base64, bigints as strings. */
export function jsonReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64')
  if (typeof value === 'bigint') return value.toString()
  return value
}

/** A plain text table (columns padded to the widest cell). */
export function table(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)))
  const format = (row: readonly string[]) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd()
  return [format(headers), ...rows.map(format)].join('\n')
}

/** Bytes for people: 1.2 KB, 3.4 MB. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

/** A wall time (ms) as an ISO string, or '-' when unknown. */
export function formatTime(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString() : '-'
}
