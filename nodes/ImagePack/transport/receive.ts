/** Reading an accepted answer: JSON objects with a cap, anything else a broken answer. */
import type { IN8nHttpFullResponse } from 'n8n-workflow';

import { redact, redactDeep } from '../shared/errors';
import { BodyTooLarge, readCapped } from './body';
import type { Connection } from './connection';
import { limits } from './limits';
import type { CallScope } from './scope';

/** A 2xx answer whose body could not be read: cut off, garbled, too large, not a JSON object. */
export interface BrokenAnswer {
	code: string;
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
			return {
				broken: {
					code: 'non_json_response',
					problem: 'the answer is JSON but not an object',
					snippet,
				},
			};
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
