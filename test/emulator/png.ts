/**
 * Real PNG files, fast: a 1-bit palette image (a frame and a centred block) whose deflated pixel data
 * is cached per size; each image gets its own palette colours and a tEXt chunk with its id, so every
 * image has distinct, stable bytes while a 4K file still takes only milliseconds.
 */
import { createHash } from 'crypto';
import { zlibSync } from 'fflate';

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

const idatCache = new Map<string, Buffer>();

/** The IDAT chunk for a size: 1 bit per pixel, palette index 1 draws a frame and a centred block. */
function idatFor(width: number, height: number): Buffer {
	const cacheKey = `${width}x${height}`;
	const cached = idatCache.get(cacheKey);
	if (cached) return cached;

	const rowBytes = Math.ceil(width / 8);
	const border = Math.max(1, Math.floor(Math.min(width, height) / 32));
	const setBits = (row: Uint8Array, from: number, to: number) => {
		for (let x = from; x < to; x++) row[1 + (x >> 3)] |= 0x80 >> (x & 7);
	};
	// Three distinct rows (filter byte 0 first): full, frame only, frame plus block.
	const full = new Uint8Array(rowBytes + 1);
	setBits(full, 0, width);
	const frame = new Uint8Array(rowBytes + 1);
	setBits(frame, 0, border);
	setBits(frame, width - border, width);
	const block = frame.slice();
	setBits(block, Math.floor(width / 3), Math.ceil((2 * width) / 3));

	const raw = new Uint8Array((rowBytes + 1) * height);
	for (let y = 0; y < height; y++) {
		let row = frame;
		if (y < border || y >= height - border) row = full;
		else if (y >= height / 3 && y < (2 * height) / 3) row = block;
		raw.set(row, y * (rowBytes + 1));
	}
	const idat = chunk('IDAT', zlibSync(raw, { level: 6 }));
	idatCache.set(cacheKey, idat);
	return idat;
}

/** PNG bytes for one image: stable for the same (id, width, height), different between images. */
export function renderPng(imageId: string, width: number, height: number): Buffer {
	const ihdr = Buffer.alloc(13);
	ihdr.writeUInt32BE(width, 0);
	ihdr.writeUInt32BE(height, 4);
	ihdr[8] = 1; // bit depth
	ihdr[9] = 3; // colour type: palette
	// compression, filter, interlace: 0
	const hash = createHash('sha256').update(imageId).digest();
	// Background light, drawing dark, both derived from the id.
	const plte = Buffer.from([
		192 + (hash[0] & 63),
		192 + (hash[1] & 63),
		192 + (hash[2] & 63),
		hash[3] & 127,
		hash[4] & 127,
		hash[5] & 127,
	]);
	const text = Buffer.from(`Comment\0image-pack emulator ${imageId}`, 'latin1');
	return Buffer.concat([
		SIGNATURE,
		chunk('IHDR', ihdr),
		chunk('PLTE', plte),
		chunk('tEXt', text),
		idatFor(width, height),
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
