/**
 * Reading what came back: an accepted answer (JSON objects with a cap, anything else a broken answer),
 * an error body, a Retry-After header; the key masked in all of it.
 */
import type { IN8nHttpFullResponse } from 'n8n-workflow';

import { type Code, codeOf } from '../shared/codes';
import { redact } from '../shared/errors';
import { BodyTooLarge, readCapped } from './body';
import type { Connection } from './connection';
import type { ApiAnswer } from './failures';
import { limits } from './limits';
import type { CallScope } from './scope';

/** A 2xx answer whose body could not be read: cut off, garbled, too large, not a JSON object. */
export interface BrokenAnswer {
	code: Code;
	problem: string;
	/** The first characters of the body, key masked. */
	snippet: string;
}

/** Reads an accepted answer: a value, or a broken answer (retried where that is safe). */
export type Receiver<R> = (
	response: IN8nHttpFullResponse,
	requestId: string | undefined,
) => Promise<{ value: R } | { broken: BrokenAnswer }>;

export function headerValue(
	headers: IN8nHttpFullResponse['headers'],
	name: string,
): string | undefined {
	const value = headers?.[name] ?? headers?.[name.toLowerCase()];
	if (Array.isArray(value)) return value[0] as string;
	return typeof value === 'string' ? value : undefined;
}

/** Reads a JSON object answer (capped); anything else is a broken answer. */
export function jsonReceiver<T>(connection: Connection, scope: CallScope): Receiver<Answer<T>> {
	return async (response, requestId) => {
		let snippet = '';
		try {
			const text = (await readCapped(response.body, limits.maxJsonBytes, scope)).toString('utf8');
			snippet = redact(text, connection.apiKey).slice(0, 200);
			const parsed: unknown = JSON.parse(text);
			if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
				const body = redactDeep(parsed, connection.apiKey) as T;
				return { value: { body, status: response.statusCode, requestId } };
			}
			const problem = 'the answer is JSON but not an object';
			return { broken: { code: 'non_json_response', problem, snippet } };
		} catch (error) {
			if (error instanceof BodyTooLarge) {
				const problem = `the answer is ${error.message}, more than an API answer can be`;
				return { broken: { code: 'answer_too_large', problem, snippet } };
			}
			if (error instanceof SyntaxError) {
				const problem = snippet ? 'the answer is not JSON' : 'the answer was empty';
				return { broken: { code: 'non_json_response', problem, snippet } };
			}
			const problem = 'the connection broke before the answer was complete';
			return { broken: { code: 'answer_cut_off', problem, snippet } };
		}
	};
}

export interface Answer<T> {
	body: T;
	status: number;
	/** The `X-Request-Id` response header, quoted when reporting a problem. */
	requestId?: string;
	/** Why a 2xx body of a paid call could not be read; `body` is then `{}`. */
	unreadable?: string;
}

/**
 * Reads an error body. The API promises `{error:{code,message,request_id}}`; proxies in front of it
 * may answer with HTML or nothing, which still has to become a clear error.
 */
export function parseErrorBody(
	httpStatus: number,
	text: string,
	requestIdHeader?: string,
): ApiAnswer {
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch {
		parsed = undefined;
	}
	const error = (parsed as { error?: Record<string, unknown> } | undefined)?.error;
	if (error && typeof error.code === 'string') {
		return {
			code: codeOf(error.code),
			httpStatus,
			requestId: typeof error.request_id === 'string' ? error.request_id : requestIdHeader,
			apiMessage: typeof error.message === 'string' ? error.message : undefined,
		};
	}
	const snippet = text
		.replace(/<[^>]*>/g, ' ')
		.replace(/\s+/g, ' ')
		.trim()
		.slice(0, 200);
	return {
		code: parsed === undefined ? 'non_json_response' : 'unknown_error',
		httpStatus,
		requestId: requestIdHeader,
		apiMessage: snippet || undefined,
	};
}

/** Seconds to wait from a Retry-After header (delta seconds or an HTTP date); undefined if absent. */
export function retryAfterSeconds(header: unknown, now = Date.now()): number | undefined {
	if (typeof header !== 'string' && typeof header !== 'number') return undefined;
	const value = String(header).trim();
	if (/^\d+(\.\d+)?$/.test(value)) return Number(value);
	// Date.parse reads almost anything ("-5", "foo 1"): only take what looks like an HTTP date
	// (a month or day name and a hh:mm:ss time), so garbage falls back to the caller's backoff.
	if (!/[a-z]{3}/i.test(value) || !/\d{1,2}:\d{2}:\d{2}/.test(value)) return undefined;
	const date = Date.parse(value);
	return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

/**
 * `redact` (shared/errors.ts) applied to every string (keys included) of a JSON-like value, without recursion, so a
 * hostile answer nested 100,000 levels deep cannot overflow the stack. Returns a copy.
 */
function redactDeep<T>(value: T, secret: string | undefined): T {
	if (!secret || secret.length < 4) return value;
	const clean = (text: string) => (text.includes(secret) ? redact(text, secret) : text);
	if (typeof value === 'string') return clean(value) as T;
	if (typeof value !== 'object' || value === null) return value;
	const root: unknown = Array.isArray(value) ? [] : {};
	const stack: Array<[unknown, Record<string, unknown>]> = [
		[value, root as Record<string, unknown>],
	];
	while (stack.length) {
		const [source, target] = stack.pop()!;
		for (const [key, child] of Object.entries(source as Record<string, unknown>)) {
			let copy: unknown = child;
			if (typeof child === 'string') copy = clean(child);
			else if (typeof child === 'object' && child !== null) {
				copy = Array.isArray(child) ? [] : {};
				stack.push([child, copy as Record<string, unknown>]);
			}
			// defineProperty: a "__proto__" key from JSON stays a plain key, not a prototype.
			Object.defineProperty(target, clean(key), {
				value: copy,
				enumerable: true,
				writable: true,
				configurable: true,
			});
		}
	}
	return root as T;
}
