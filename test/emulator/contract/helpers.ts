/** Shared helpers of the contract suite: one emulator per test file, raw HTTP with undici. */
import { unzlibSync } from 'fflate';
import { request } from 'undici';

import { startEmulator } from '../index';
import type { Emulator } from '../index';

export interface Reply {
	status: number;
	headers: Record<string, string>;
	text: string;
	bytes: Buffer;
	// eslint-disable-next-line @typescript-eslint/no-explicit-any
	json: any;
}

export interface CallOptions {
	/** API key; null sends no Authorization header. Default: the emulator's ready key. */
	key?: string | null;
	body?: unknown;
	/** A raw body (sent as is). */
	raw?: string;
	headers?: Record<string, string>;
}

export function setup(): { emu: () => Emulator } {
	let emulator: Emulator | undefined;
	beforeAll(async () => {
		emulator = await startEmulator({ port: 0 });
	});
	afterAll(async () => {
		await emulator?.close();
	});
	beforeEach(async () => {
		await emulator!.control.reset();
	});
	return { emu: () => emulator! };
}

export async function call(
	emu: Emulator,
	method: 'GET' | 'POST' | 'HEAD',
	pathOrUrl: string,
	options: CallOptions = {},
): Promise<Reply> {
	const headers: Record<string, string> = { ...options.headers };
	const key = options.key === undefined ? emu.apiKey : options.key;
	if (key !== null) headers.authorization = `Bearer ${key}`;
	let body: string | undefined = options.raw;
	if (options.body !== undefined) {
		body = JSON.stringify(options.body);
		headers['content-type'] ??= 'application/json';
	}
	const url = pathOrUrl.startsWith('http') ? pathOrUrl : emu.baseUrl + pathOrUrl;
	const res = await request(url, { method, headers, body });
	const bytes = Buffer.from(await res.body.arrayBuffer());
	const text = bytes.toString('utf8');
	const flat: Record<string, string> = {};
	for (const [name, value] of Object.entries(res.headers)) {
		if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
	}
	let json: unknown;
	if ((flat['content-type'] ?? '').includes('json') && text) {
		try {
			json = JSON.parse(text);
		} catch {
			json = undefined;
		}
	}
	return { status: res.statusCode, headers: flat, text, bytes, json };
}

export const generate = (emu: Emulator, body: unknown, options: CallOptions = {}) =>
	call(emu, 'POST', '/api/v1/generate', { ...options, body });

/** Asserts the documented error shape and returns the code. */
export function expectError(reply: Reply, status: number, code: string): void {
	expect({ status: reply.status, code: reply.json?.error?.code }).toEqual({ status, code });
	expect(reply.json.error.request_id).toMatch(/^req_[0-9a-z]+$/);
	expect(reply.headers['x-request-id']).toBe(reply.json.error.request_id);
	expect(typeof reply.json.error.message).toBe('string');
}

/** Fully decodes a PNG (chunk CRCs, inflated size) and returns its size; throws when invalid. */
export function decodePng(bytes: Buffer): { width: number; height: number } {
	const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
	if (!bytes.subarray(0, 8).equals(signature)) throw new Error('not a PNG signature');
	let offset = 8;
	let width = 0;
	let height = 0;
	let bitDepth = 0;
	let colourType = 0;
	const idat: Buffer[] = [];
	let ended = false;
	while (offset < bytes.length) {
		const length = bytes.readUInt32BE(offset);
		const type = bytes.toString('ascii', offset + 4, offset + 8);
		const data = bytes.subarray(offset + 8, offset + 8 + length);
		const crc = bytes.readUInt32BE(offset + 8 + length);
		if (crc !== crc32(bytes.subarray(offset + 4, offset + 8 + length))) throw new Error(`bad CRC in ${type}`);
		if (type === 'IHDR') {
			width = data.readUInt32BE(0);
			height = data.readUInt32BE(4);
			bitDepth = data[8];
			colourType = data[9];
		}
		if (type === 'IDAT') idat.push(data);
		if (type === 'IEND') ended = true;
		offset += 12 + length;
	}
	if (!ended) throw new Error('no IEND');
	const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colourType] ?? 1;
	const raw = unzlibSync(Buffer.concat(idat));
	const expected = (Math.ceil((width * channels * bitDepth) / 8) + 1) * height;
	if (raw.length !== expected) throw new Error(`pixel data ${raw.length} bytes, expected ${expected}`);
	return { width, height };
}

function crc32(data: Uint8Array): number {
	let c = 0xffffffff;
	for (let i = 0; i < data.length; i++) {
		c ^= data[i];
		for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
	}
	return (c ^ 0xffffffff) >>> 0;
}
