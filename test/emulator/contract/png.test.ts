/**
 * The emulator's pictures: valid PNGs (CRC, zlib with its Adler-32, exact size) at every size, that
 * look like pictures (many shades, a caption), and differ by id, model and prompt.
 */
import { unzlibSync } from 'fflate';

import { LONG_SIDE, dimensions } from '../catalog';
import { renderPng } from '../png';
import { decodePng } from './helpers';

function pixels(png: Buffer) {
	const { width, height } = decodePng(png);
	let offset = 8;
	const idat: Buffer[] = [];
	while (offset < png.length) {
		const length = png.readUInt32BE(offset);
		if (png.toString('ascii', offset + 4, offset + 8) === 'IDAT') idat.push(png.subarray(offset + 8, offset + 8 + length));
		offset += 12 + length;
	}
	const stream = Buffer.concat(idat);
	const raw = unzlibSync(stream);
	let a = 1;
	let b = 0;
	for (const byte of raw) {
		a = (a + byte) % 65521;
		b = (b + a) % 65521;
	}
	const adler = stream.readUInt32BE(stream.length - 4);
	// Undo the filters (None or Up) to get palette indices.
	const rows: Uint8Array[] = [];
	for (let y = 0; y < height; y++) {
		const line = raw.subarray(y * (width + 1), (y + 1) * (width + 1));
		const row = new Uint8Array(width);
		for (let x = 0; x < width; x++) row[x] = line[0] === 2 ? (rows[y - 1][x] + line[1 + x]) & 255 : line[1 + x];
		if (line[0] !== 0 && line[0] !== 2) throw new Error(`unexpected filter ${line[0]}`);
		rows.push(row);
	}
	return { width, height, adlerOk: adler === ((b << 16) | a) >>> 0, rows };
}

const caption = { model: 'nano-banana-2', prompt: 'A white ceramic mug on an oak table' };

test.each(Object.keys(LONG_SIDE) as Array<keyof typeof LONG_SIDE>)('valid at %s in every ratio', (resolution) => {
	for (const ratio of ['1:1', '3:4', '4:5', '16:9', '9:16'] as const) {
		const { width, height } = dimensions(ratio, resolution);
		const decoded = pixels(renderPng('img_test', width, height, caption));
		expect([decoded.width, decoded.height, decoded.adlerOk]).toEqual([width, height, true]);
	}
});

test('looks like a picture: many shades, and a caption in the panel at the bottom', () => {
	const { rows, height } = pixels(renderPng('img_look', 1024, 1024, caption));
	const shades = new Set(rows.flatMap((row) => [...new Set(row)]));
	expect(shades.size).toBeGreaterThan(100);
	const panel = rows.slice(Math.floor(height * 0.85));
	expect(panel.some((row) => new Set(row).size > 1)).toBe(true); // text drawn on the panel
});

test('distinct bytes per id, model and prompt; stable for the same input', () => {
	const base = renderPng('img_a', 1024, 768, caption);
	expect(renderPng('img_a', 1024, 768, caption).equals(base)).toBe(true);
	for (const other of [
		renderPng('img_b', 1024, 768, caption),
		renderPng('img_a', 1024, 768, { ...caption, model: 'gpt-image-2' }),
		renderPng('img_a', 1024, 768, { ...caption, prompt: 'A blue mug' }),
	])
		expect(other.equals(base)).toBe(false);
});
