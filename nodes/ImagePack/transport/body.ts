/** Response bodies, always streams (every request asks n8n for `encoding: 'stream'`), read with caps. */
import type { CallScope } from './connection';
import { formatBytes } from './limits';

export class BodyTooLarge extends Error {
	readonly code = 'ERR_BODY_TOO_LARGE';

	constructor(readonly maxBytes: number) {
		super(`larger than ${formatBytes(maxBytes)}`);
	}
}

interface Stream extends AsyncIterable<Buffer | string> {
	destroy?: (error?: Error) => void;
	once?: (event: string, listener: () => void) => void;
	push?: (chunk: unknown, encoding?: string) => boolean;
}

function isStream(body: unknown): body is Stream {
	return (
		typeof body === 'object' &&
		typeof (body as Stream | null)?.[Symbol.asyncIterator] === 'function'
	);
}

/** Drops a body nobody reads, so its connection is released. */
export function discard(body: unknown): void {
	if (isStream(body)) body.destroy?.();
}

/** Destroys the stream when the call is stopped or out of time. */
function abortWith(stream: Stream, scope: CallScope): () => void {
	const onAbort = () => stream.destroy?.(new Error('aborted'));
	scope.signal.addEventListener('abort', onAbort, { once: true });
	if (scope.signal.aborted) onAbort();
	return () => scope.signal.removeEventListener('abort', onAbort);
}

/**
 * Reads a body into memory, at most `maxBytes`: with `truncate` the rest is dropped (error bodies),
 * otherwise going over is a BodyTooLarge. Stops when the call is stopped or out of time.
 */
export async function readCapped(
	body: unknown,
	maxBytes: number,
	scope: CallScope,
	truncate = false,
): Promise<Buffer> {
	if (!isStream(body)) return Buffer.alloc(0);
	const chunks: Buffer[] = [];
	let size = 0;
	const release = abortWith(body, scope);
	try {
		for await (const chunk of body) {
			const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
			size += buffer.length;
			if (size > maxBytes) {
				body.destroy?.();
				if (!truncate) throw new BodyTooLarge(maxBytes);
				chunks.push(buffer.subarray(0, buffer.length - (size - maxBytes)));
				break;
			}
			chunks.push(buffer);
		}
	} finally {
		release();
	}
	return Buffer.concat(chunks);
}

/**
 * Bounds a body that is streamed on (a download): at most `maxBytes`, destroyed when the call is
 * stopped. Counted where bytes enter the stream, so the consumer's flow control stays untouched.
 */
export function guardStream(body: unknown, maxBytes: number, scope: CallScope): void {
	if (!isStream(body)) return;
	const release = abortWith(body, scope);
	body.once?.('close', release);
	if (typeof body.push !== 'function') return;
	const push = body.push.bind(body);
	let size = 0;
	body.push = (chunk: unknown, encoding?: string) => {
		size += (chunk as { length?: number } | null)?.length ?? 0;
		if (size > maxBytes) {
			body.destroy?.(new BodyTooLarge(maxBytes));
			return false;
		}
		return push(chunk, encoding);
	};
}
