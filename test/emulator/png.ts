/**
 * Real PNG files that look like pictures, fast at every size: a soft two-colour backdrop, a round
 * "product" with its own shading, and a caption with the size, the model and a digest of the prompt,
 * drawn in a tiny built-in bitmap font. Each image gets its own colours from its id (and a tEXt chunk
 * with the id), so every image has distinct, stable bytes.
 *
 * Why it is fast: every pixel row is a handful of runs of one palette colour, and the compressed
 * stream is written directly from those runs (deflate with fixed Huffman codes: a literal, then
 * distance-1 copies), with the Adler-32 checksum computed per run in closed form. A 4K image costs
 * a few thousand run operations, never a pass over its 16 million pixels.
 */
import { createHash } from 'crypto';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const CRC_TABLE = (() => {
	const table = new Uint32Array(256);
	for (let n = 0; n < 256; n++) {
		let c = n;
		for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
		table[n] = c >>> 0;
	}
	return table;
})();

function crc32(data: Uint8Array): number {
	let c = 0xffffffff;
	for (let i = 0; i < data.length; i++) c = CRC_TABLE[(c ^ data[i]) & 0xff] ^ (c >>> 8);
	return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
	const out = Buffer.alloc(12 + data.length);
	out.writeUInt32BE(data.length, 0);
	out.write(type, 4, 'ascii');
	Buffer.from(data.buffer, data.byteOffset, data.length).copy(out, 8);
	out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
	return out;
}

// ---- A zlib stream written from runs (RFC 1950/1951, one fixed-Huffman block) ----

/** Bit-reversed fixed Huffman codes of the literal/length alphabet (0-287), with their lengths. */
const FIXED = (() => {
	const codes = new Uint16Array(288);
	const lengths = new Uint8Array(288);
	const reverse = (code: number, length: number) => {
		let out = 0;
		for (let i = 0; i < length; i++) out |= ((code >> i) & 1) << (length - 1 - i);
		return out;
	};
	for (let symbol = 0; symbol < 288; symbol++) {
		const [base, first, length] =
			symbol < 144 ? [0x30, 0, 8] : symbol < 256 ? [0x190, 144, 9] : symbol < 280 ? [0, 256, 7] : [0xc0, 280, 8];
		codes[symbol] = reverse(base + symbol - first, length);
		lengths[symbol] = length;
	}
	return { codes, lengths };
})();

/** Length codes 257-284: [first length, extra bits]. */
const LENGTH_BASES: Array<[number, number]> = [
	[3, 0], [4, 0], [5, 0], [6, 0], [7, 0], [8, 0], [9, 0], [10, 0],
	[11, 1], [13, 1], [15, 1], [17, 1], [19, 2], [23, 2], [27, 2], [31, 2],
	[35, 3], [43, 3], [51, 3], [59, 3], [67, 4], [83, 4], [99, 4], [115, 4],
	[131, 5], [163, 5], [195, 5], [227, 5],
];

const ADLER_MOD = 65521;

class RunDeflater {
	private out = new Uint8Array(1 << 16);
	private size = 0;
	private bits = 0;
	private bitCount = 0;
	private adlerA = 1;
	private adlerB = 0;

	constructor() {
		this.byte(0x78);
		this.byte(0x01);
		this.write(0b011, 3); // final block, fixed Huffman codes
	}

	private byte(value: number) {
		if (this.size === this.out.length) {
			const bigger = new Uint8Array(this.out.length * 2);
			bigger.set(this.out);
			this.out = bigger;
		}
		this.out[this.size++] = value;
	}

	private write(value: number, count: number) {
		this.bits |= value << this.bitCount;
		this.bitCount += count;
		while (this.bitCount >= 8) {
			this.byte(this.bits & 0xff);
			this.bits >>>= 8;
			this.bitCount -= 8;
		}
	}

	private symbol(symbol: number) {
		this.write(FIXED.codes[symbol], FIXED.lengths[symbol]);
	}

	/** A copy of `length` (3-258) bytes from distance 1. */
	private copy(length: number) {
		if (length === 258) {
			this.symbol(285);
		} else {
			let index = LENGTH_BASES.length - 1;
			while (LENGTH_BASES[index][0] > length) index--;
			const [base, extra] = LENGTH_BASES[index];
			this.symbol(257 + index);
			if (extra) this.write(length - base, extra);
		}
		this.write(0, 5); // distance code 0: distance 1
	}

	/** `count` bytes of `value`. */
	run(value: number, count: number) {
		if (count <= 0) return;
		this.symbol(value);
		let left = count - 1;
		while (left >= 3) {
			const length = Math.min(258, left);
			// Never leave 1-2 bytes that a copy cannot take, unless they are all that is left.
			const take = left - length > 0 && left - length < 3 ? length - 3 : length;
			this.copy(take);
			left -= take;
		}
		for (; left > 0; left--) this.symbol(value);
		// Adler-32 of `count` equal bytes, in closed form.
		this.adlerB = (this.adlerB + count * this.adlerA + ((value * count * (count + 1)) / 2) % ADLER_MOD) % ADLER_MOD;
		this.adlerA = (this.adlerA + count * value) % ADLER_MOD;
	}

	finish(): Uint8Array {
		this.symbol(256);
		if (this.bitCount > 0) this.write(0, 8 - this.bitCount);
		const adler = ((this.adlerB << 16) | this.adlerA) >>> 0;
		for (const shift of [24, 16, 8, 0]) this.byte((adler >>> shift) & 0xff);
		return this.out.subarray(0, this.size);
	}
}

// ---- The picture ----

/** 5×7 glyphs, one number per row, bit 4 = leftmost column. */
const FONT: Record<string, number[]> = {
	'0': [14, 17, 19, 21, 25, 17, 14], '1': [4, 12, 4, 4, 4, 4, 14], '2': [14, 17, 1, 2, 4, 8, 31],
	'3': [31, 2, 4, 2, 1, 17, 14], '4': [2, 6, 10, 18, 31, 2, 2], '5': [31, 16, 30, 1, 1, 17, 14],
	'6': [6, 8, 16, 30, 17, 17, 14], '7': [31, 1, 2, 4, 8, 8, 8], '8': [14, 17, 17, 14, 17, 17, 14],
	'9': [14, 17, 17, 15, 1, 2, 12], A: [14, 17, 17, 17, 31, 17, 17], B: [30, 17, 17, 30, 17, 17, 30],
	C: [14, 17, 16, 16, 16, 17, 14], D: [28, 18, 17, 17, 17, 18, 28], E: [31, 16, 16, 30, 16, 16, 31],
	F: [31, 16, 16, 30, 16, 16, 16], G: [14, 17, 16, 23, 17, 17, 15], H: [17, 17, 17, 31, 17, 17, 17],
	I: [14, 4, 4, 4, 4, 4, 14], J: [7, 2, 2, 2, 2, 18, 12], K: [17, 18, 20, 24, 20, 18, 17],
	L: [16, 16, 16, 16, 16, 16, 31], M: [17, 27, 21, 21, 17, 17, 17], N: [17, 17, 25, 21, 19, 17, 17],
	O: [14, 17, 17, 17, 17, 17, 14], P: [30, 17, 17, 30, 16, 16, 16], Q: [14, 17, 17, 17, 21, 18, 13],
	R: [30, 17, 17, 30, 20, 18, 17], S: [15, 16, 16, 14, 1, 1, 30], T: [31, 4, 4, 4, 4, 4, 4],
	U: [17, 17, 17, 17, 17, 17, 14], V: [17, 17, 17, 17, 17, 10, 4], W: [17, 17, 17, 21, 21, 21, 10],
	X: [17, 17, 10, 4, 10, 17, 17], Y: [17, 17, 17, 10, 4, 4, 4], Z: [31, 1, 2, 4, 8, 16, 31],
	'-': [0, 0, 0, 31, 0, 0, 0], '.': [0, 0, 0, 0, 0, 12, 12], '#': [10, 10, 31, 10, 31, 10, 10],
	':': [0, 12, 12, 0, 12, 12, 0], '×': [0, 17, 10, 4, 10, 17, 0], '/': [0, 1, 2, 4, 8, 16, 0],
	_: [0, 0, 0, 0, 0, 0, 31], ' ': [0, 0, 0, 0, 0, 0, 0],
};
const GLYPH_W = 6; // 5 columns and a gap
const GLYPH_H = 7;
const LINE_H = 10;

/** Palette layout: backdrop shades, product shades, caption colours. */
const SHADES = 96;
const BACKDROP = 0;
const PRODUCT = SHADES;
const PANEL = 2 * SHADES;
const INK = PANEL + 1;
const SHADOW = PANEL + 2;

export interface Caption {
	model?: string;
	prompt?: string;
}

function mix(from: number[], to: number[], t: number): number[] {
	return from.map((value, i) => Math.round(value + (to[i] - value) * t));
}

function palette(hash: Buffer): Buffer {
	const hue = (offset: number, light: number) => [0, 1, 2].map((i) => light + (hash[offset + i] % (255 - light)));
	const top = hue(0, 170);
	const bottom = hue(3, 110);
	const productTop = hue(6, 60).map((v) => Math.min(255, v + 40));
	const productBottom = hue(6, 20).map((v) => Math.round(v * 0.45));
	const entries: number[][] = [];
	for (let i = 0; i < SHADES; i++) entries.push(mix(top, bottom, i / (SHADES - 1)));
	for (let i = 0; i < SHADES; i++) entries.push(mix(productTop, productBottom, i / (SHADES - 1)));
	entries.push([24, 24, 32], [250, 250, 250], [70, 70, 80]);
	return Buffer.from(entries.flat());
}

type Run = [value: number, count: number];

/** The caption's text lines, upper case, in glyphs the font has. */
function captionLines(width: number, height: number, caption: Caption): string[] {
	const clean = (text: string) => [...text.toUpperCase()].map((ch) => (ch in FONT ? ch : '-')).join('');
	const lines = [`${width} × ${height}`];
	if (caption.model) lines.push(clean(caption.model));
	if (caption.prompt !== undefined) {
		lines.push(`PROMPT #${createHash('sha256').update(caption.prompt).digest('hex').slice(0, 6).toUpperCase()}`);
	}
	return lines;
}

/** Runs of one pixel row (filter byte excluded). */
function rowRuns(
	y: number,
	width: number,
	height: number,
	layout: ReturnType<typeof planLayout>,
	textRuns: Run[] | undefined,
): Run[] {
	const { panelTop, cx, cy, radius } = layout;
	if (y >= panelTop) return textRuns ?? [[PANEL, width]];
	const backdrop = BACKDROP + Math.min(SHADES - 1, Math.floor((y / panelTop) * SHADES));
	const dy = y + 0.5 - cy;
	if (Math.abs(dy) >= radius) {
		// The product's shadow on the floor, just below it.
		const shadowY = (y + 0.5 - (cy + radius * 1.02)) / (radius * 0.12);
		if (Math.abs(shadowY) < 1) {
			const half = Math.round(radius * 0.8 * Math.sqrt(1 - shadowY * shadowY));
			return [[backdrop, cx - half], [SHADOW, 2 * half], [backdrop, width - cx - half]];
		}
		return [[backdrop, width]];
	}
	const half = Math.round(Math.sqrt(radius * radius - dy * dy));
	const shade = PRODUCT + Math.min(SHADES - 1, Math.floor(((dy + radius) / (2 * radius)) * SHADES));
	const left = Math.max(0, cx - half);
	const right = Math.min(width, cx + half);
	return [[backdrop, left], [shade, right - left], [backdrop, width - right]];
}

function planLayout(width: number, height: number, lines: string[]) {
	const longest = Math.max(...lines.map((line) => line.length));
	const scale = Math.max(
		1,
		Math.min(Math.floor(Math.min(width, height) / 160), Math.floor((width * 0.9) / (longest * GLYPH_W))),
	);
	const panelHeight = Math.min(height, (lines.length * LINE_H + 4) * scale);
	const panelTop = height - panelHeight;
	const radius = Math.max(1, Math.floor(Math.min(width, panelTop) * 0.3));
	return { scale, panelTop, cx: Math.floor(width / 2), cy: Math.floor(panelTop * 0.46), radius };
}

/** Runs of a row of palette indices. */
function toRuns(row: Uint8Array): Run[] {
	const runs: Run[] = [];
	let start = 0;
	for (let x = 1; x <= row.length; x++) {
		if (x === row.length || row[x] !== row[start]) {
			runs.push([row[start], x - start]);
			start = x;
		}
	}
	return runs;
}

/** The caption panel's pixel rows that hold text: row index -> runs of the row. */
function textRows(width: number, lines: string[], layout: ReturnType<typeof planLayout>) {
	const rows = new Map<number, Run[]>();
	const { scale, panelTop } = layout;
	lines.forEach((line, lineIndex) => {
		const chars = [...line];
		const left = Math.floor((width - (chars.length * GLYPH_W - 1) * scale) / 2);
		for (let glyphRow = 0; glyphRow < GLYPH_H; glyphRow++) {
			const row = new Uint8Array(width).fill(PANEL);
			chars.forEach((ch, i) => {
				const bits = FONT[ch][glyphRow];
				for (let col = 0; col < 5; col++) {
					if (!(bits & (16 >> col))) continue;
					const x = left + (i * GLYPH_W + col) * scale;
					row.fill(INK, Math.max(0, x), Math.min(width, x + scale));
				}
			});
			const runs = toRuns(row);
			const top = panelTop + (2 + lineIndex * LINE_H + glyphRow) * scale;
			for (let dy = 0; dy < scale; dy++) rows.set(top + dy, runs);
		}
	});
	return rows;
}

function sameRuns(a: Run[], b: Run[] | undefined): boolean {
	return !!b && a.length === b.length && a.every((run, i) => run[0] === b[i][0] && run[1] === b[i][1]);
}

/** The zlib-compressed image data: 8-bit palette indices, filter None, or Up for a repeated row. */
function imageData(width: number, height: number, caption: Caption): Uint8Array {
	const lines = captionLines(width, height, caption);
	const layout = planLayout(width, height, lines);
	const text = textRows(width, lines, layout);
	const deflater = new RunDeflater();
	let previous: Run[] | undefined;
	for (let y = 0; y < height; y++) {
		const runs = rowRuns(y, width, height, layout, text.get(y)).filter(([, count]) => count > 0);
		if (sameRuns(runs, previous)) {
			deflater.run(2, 1); // filter Up: the row above, unchanged
			deflater.run(0, width);
		} else {
			deflater.run(0, 1);
			for (const [value, count] of runs) deflater.run(value, count);
		}
		previous = runs;
	}
	return deflater.finish();
}

/**
 * PNG bytes for one image: stable for the same (id, width, height, caption), different between
 * images. The caption shows the size, and the model and a digest of the prompt when given.
 */
export function renderPng(imageId: string, width: number, height: number, caption: Caption = {}): Buffer {
	const ihdr = Buffer.alloc(13);
	ihdr.writeUInt32BE(width, 0);
	ihdr.writeUInt32BE(height, 4);
	ihdr[8] = 8; // bit depth
	ihdr[9] = 3; // colour type: palette
	// compression, filter, interlace: 0
	const hash = createHash('sha256').update(imageId).digest();
	const text = Buffer.from(`Comment\0image-pack emulator ${imageId}`, 'latin1');
	return Buffer.concat([
		SIGNATURE,
		chunk('IHDR', ihdr),
		chunk('PLTE', palette(hash)),
		chunk('tEXt', text),
		chunk('IDAT', imageData(width, height, caption)),
		chunk('IEND', new Uint8Array(0)),
	]);
}

/** Width and height from a PNG's IHDR (for tests and callers checking downloads). */
export function pngSize(bytes: Uint8Array): { width: number; height: number } | undefined {
	const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
	if (buf.length < 24 || !buf.subarray(0, 8).equals(SIGNATURE) || buf.toString('ascii', 12, 16) !== 'IHDR') {
		return undefined;
	}
	return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}
