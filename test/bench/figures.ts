/**
 * One measured figure of the benchmark, and the plain-text / Markdown tables they are printed as.
 * A figure is compared with its ideal (what a perfect client would need on the same emulator); the
 * ratio measured / ideal is what the benchmark's performance targets bound.
 */

export type Verdict = 'pass' | 'miss' | 'info';

export interface Figure {
	/** Which of the five measurements it belongs to. */
	group: string;
	figure: string;
	measured: number;
	ideal: number | null;
	unit: string;
	/** measured / ideal, when both make sense. */
	ratio: number | null;
	/** The target as a human reads it, e.g. "ratio ≤ 1.1"; '—' when there is none. */
	target: string;
	verdict: Verdict;
	/** A short remark printed under the table. */
	note?: string;
}

export interface FigureInput {
	group: string;
	figure: string;
	measured: number;
	ideal?: number | null;
	unit: string;
	/** Maximum allowed ratio measured / ideal. */
	maxRatio?: number;
	/** Maximum allowed measured value (absolute). */
	maxValue?: number;
	/** Target text when neither bound describes it. */
	target?: string;
	/** A verdict decided by the caller (e.g. a growth check over a series). */
	verdict?: Verdict;
	note?: string;
}

export function figure(input: FigureInput): Figure {
	const ideal = input.ideal ?? null;
	const ratio = ideal !== null && ideal > 0 ? input.measured / ideal : ideal === 0 && input.measured === 0 ? 1 : null;
	let verdict: Verdict = input.verdict ?? 'info';
	let target = input.target ?? '—';
	if (input.verdict === undefined && input.maxRatio !== undefined) {
		verdict = ratio !== null && ratio <= input.maxRatio + 1e-9 ? 'pass' : 'miss';
		target = input.target ?? `ratio ≤ ${input.maxRatio}`;
	} else if (input.verdict === undefined && input.maxValue !== undefined) {
		verdict = input.measured <= input.maxValue ? 'pass' : 'miss';
		target = input.target ?? `≤ ${formatValue(input.maxValue, input.unit)}`;
	}
	return {
		group: input.group,
		figure: input.figure,
		measured: input.measured,
		ideal,
		unit: input.unit,
		ratio,
		target,
		verdict,
		note: input.note,
	};
}

export function formatValue(value: number | null, unit: string): string {
	if (value === null || !Number.isFinite(value)) return '—';
	switch (unit) {
		case 'ms':
			return value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${value.toFixed(value < 10 ? 2 : 0)} ms`;
		case 'bytes':
			if (value >= 1024 * 1024) return `${(value / 1024 / 1024).toFixed(2)} MiB`;
			if (value >= 1024) return `${(value / 1024).toFixed(1)} KiB`;
			return `${Math.round(value)} B`;
		case '':
			return Number.isInteger(value) ? value.toLocaleString('en-US') : value.toFixed(2);
		default:
			return `${Number.isInteger(value) ? value.toLocaleString('en-US') : value.toFixed(2)} ${unit}`;
	}
}

function formatRatio(ratio: number | null): string {
	if (ratio === null || !Number.isFinite(ratio)) return '—';
	return ratio >= 100 ? ratio.toFixed(0) : ratio.toFixed(2);
}

const HEADERS = ['Figure', 'Measured', 'Ideal', 'Ratio', 'Target', 'Result'];

function cells(f: Figure): string[] {
	return [
		f.figure,
		formatValue(f.measured, f.unit),
		formatValue(f.ideal, f.unit),
		formatRatio(f.ratio),
		f.target,
		f.verdict,
	];
}

/** A fixed-width table, grouped by measurement, for a terminal. */
export function textTable(figures: Figure[]): string {
	const rows = figures.map(cells);
	const widths = HEADERS.map((header, i) => Math.max(header.length, ...rows.map((row) => row[i].length)));
	const line = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
	const out: string[] = [line(HEADERS), widths.map((w) => '-'.repeat(w)).join('  ')];
	let group = '';
	figures.forEach((f, index) => {
		if (f.group !== group) {
			group = f.group;
			out.push(`[${group}]`);
		}
		out.push(line(rows[index]));
	});
	const notes = notesOf(figures);
	if (notes.length) out.push('', ...notes.map((note, i) => `(${i + 1}) ${note}`));
	return out.join('\n');
}

/** The same figures as a Markdown table (one table, the group as a bold first cell). */
export function markdownTable(figures: Figure[]): string {
	const escape = (text: string) => text.replace(/\|/g, '\\|');
	const out = [`| ${HEADERS.join(' | ')} |`, `| ${HEADERS.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`];
	let group = '';
	for (const f of figures) {
		if (f.group !== group) {
			group = f.group;
			out.push(`| **${escape(group)}** | | | | | |`);
		}
		out.push(`| ${cells(f).map(escape).join(' | ')} |`);
	}
	const notes = notesOf(figures);
	if (notes.length) out.push('', ...notes.map((note) => `- ${note}`));
	return out.join('\n');
}

function notesOf(figures: Figure[]): string[] {
	return [...new Set(figures.map((f) => f.note).filter((note): note is string => Boolean(note)))];
}

export function summary(figures: Figure[]): { pass: number; miss: number; info: number } {
	return {
		pass: figures.filter((f) => f.verdict === 'pass').length,
		miss: figures.filter((f) => f.verdict === 'miss').length,
		info: figures.filter((f) => f.verdict === 'info').length,
	};
}
