/**
 * Every error the package raises is built here, by `imagePackError`, and carries its facts: the code,
 * the HTTP status, the request id, the item and what the failure cost (`charge`, decided once where
 * the request was made). Callers read the facts with `errorFacts`, never the text.
 *
 * The English messages follow the API's error codes (API document §7): the service's own messages
 * are Chinese and may change, so the node branches on `error.code` only and keeps the original
 * message as detail.
 */
import type { IDataObject, INode, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { SCOPE_OPERATIONS, routeOf } from '../transport/routes';

export interface ApiErrorInfo {
	/** `error.code` from the body, or a code of ours for bodies that carry none. */
	code: string;
	httpStatus: number;
	requestId?: string;
	/** The service's own message (Chinese by default). */
	apiMessage?: string;
}

const MESSAGES: Record<string, string> = {
	invalid_request: 'The Image Pack API rejected the request as invalid',
	invalid_model: 'The Image Pack API does not support the requested model',
	reference_image_missing:
		'A reference image no longer exists or does not belong to this account (it was deleted, cleaned up or is another account’s)',
	unauthorized: 'No API key reached the Image Pack API: check the Image Pack API credential',
	invalid_api_key:
		'The API key is invalid, revoked or expired: create a new key in the developer center and update the Image Pack API credential',
	insufficient_credits:
		'Not enough credits for this generation: top up the account (the service’s message states the credits needed and available)',
	insufficient_scope: 'The API key lacks the scope this operation needs',
	session_not_found: 'The session does not exist or belongs to another account',
	rate_limited: 'The API key is over its rate limit',
	new_user_daily_limit:
		'Accounts younger than 7 days may spend at most 2000 credits in 24 hours, and this account reached that limit',
	internal_error: 'The generation failed on the service; the reserved credits were refunded',
	not_found: 'Not found, or it belongs to another account',
	non_json_response: 'The Image Pack API answered with something that is not JSON',
	expired_link: 'The signed download link was refused (it may have expired)',
	unexpected_redirect:
		'The Image Pack API answered with a redirect, which the node does not follow',
	bad_redirect: 'The file endpoint redirected somewhere the node does not follow',
	no_signed_link:
		'The file endpoint served the file itself instead of a signed link, so there is no link to open without the API key',
	answer_too_large: 'The Image Pack API answered with more data than an API answer can hold',
	answer_cut_off: 'The answer of the Image Pack API was cut off before it was complete',
};

/** The English message for an API error, by code; unknown codes still say what happened. */
export function englishMessage(info: ApiErrorInfo, path: string): string {
	const route = routeOf(path);
	if (info.code === 'insufficient_scope') {
		const scope = route?.scope;
		if (scope) {
			return `The API key lacks the ${scope} scope, which ${SCOPE_OPERATIONS[scope]} need: add it to the key in the developer center`;
		}
	}
	if (info.code === 'not_found' || (info.httpStatus === 404 && !MESSAGES[info.code])) {
		return route?.notFound ?? MESSAGES.not_found;
	}
	// The refund promise belongs to generate; on the read endpoints it is just a server failure.
	if (info.code === 'internal_error' && !route?.paid) {
		return `The Image Pack API failed with an internal error (HTTP ${info.httpStatus})`;
	}
	const known = MESSAGES[info.code];
	if (known) return known;
	if (info.httpStatus >= 500) return `The Image Pack API failed with HTTP ${info.httpStatus}`;
	return `The Image Pack API returned an error (code "${info.code}", HTTP ${info.httpStatus})`;
}

/** The description shown under the message: everything support needs to find the request. */
export function errorDescription(info: ApiErrorInfo, extra?: string): string {
	const parts = [`code: ${info.code}`, `HTTP status: ${info.httpStatus}`];
	if (info.requestId) parts.push(`request id: ${info.requestId}`);
	if (info.apiMessage) parts.push(`API message: ${info.apiMessage}`);
	if (extra) parts.push(extra);
	return parts.join(' · ');
}

/**
 * Reads an error body. The API promises `{error:{code,message,request_id}}`; proxies in front of it
 * may answer with HTML or nothing, which still has to become a clear error.
 */
export function parseErrorBody(
	httpStatus: number,
	text: string,
	requestIdHeader?: string,
): ApiErrorInfo {
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch {
		parsed = undefined;
	}
	const error = (parsed as { error?: Record<string, unknown> } | undefined)?.error;
	if (error && typeof error.code === 'string') {
		return {
			code: error.code,
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

/** Removes a secret from text that may end up in an error, a log or an output item. */
export function redact(text: string, secret: string | undefined): string {
	if (!secret || secret.length < 4) return text;
	return text.split(secret).join('sk_***');
}

/**
 * `redact` applied to every string (keys included) of a JSON-like value, without recursion, so a
 * hostile answer nested 100,000 levels deep cannot overflow the stack. Returns a copy.
 */
export function redactDeep<T>(value: T, secret: string | undefined): T {
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

/** What a failure cost, as far as the node can know; decided where the request was made. */
export type ChargeOutcome = 'not_sent' | 'not_charged' | 'may_have_been_charged';

export interface ErrorFacts {
	/** The API's `error.code`, or a code of ours (`invalid_parameter`, `timeout`, …). */
	code: string;
	/** The HTTP status of the answer; 0 when the request got none (network, timeout). */
	httpStatus?: number;
	requestId?: string;
	charge: ChargeOutcome;
	itemIndex?: number;
	/** The service's own message (Chinese by default). */
	apiMessage?: string;
	/** The parameter at fault, for `invalid_parameter`. */
	parameter?: string;
	/** The session a generation that may have been charged belongs to (none: a new session). */
	sessionId?: string;
}

export interface ErrorWords {
	/** What happened, in English, without the item. */
	message: string;
	description?: string;
	/** Start the message with "Item N: " (errors about an item's own input). */
	namesItem?: boolean;
	/** A secret to mask in every text (the API key). */
	secret?: string;
}

/** What the user should do after a generation that may have run. */
export function chargeHint(sessionId?: string): string {
	const where = sessionId ? `session ${sessionId}` : 'the newest "API generation" session';
	return `The generation may have run and may have been charged: check ${where} on the website before running it again`;
}

/**
 * The one constructor. An error about a request's outcome (it has an `httpStatus`, 0 for none) is a
 * NodeApiError, anything found before or after a request a NodeOperationError. The facts go on the
 * error's context, where n8n keeps them and `errorFacts` reads them.
 */
export function imagePackError(
	node: INode,
	facts: ErrorFacts,
	words: ErrorWords,
): NodeApiError | NodeOperationError {
	const clean = redactDeep(facts, words.secret);
	const { itemIndex } = clean;
	// The description always says a generation may have run; the message too when the service gave
	// no failure status of its own (no answer, or a 2xx that could not be read).
	const uncertain = clean.charge === 'may_have_been_charged';
	const hint = uncertain ? chargeHint(clean.sessionId) : undefined;
	const noFailureStatus = !clean.httpStatus || clean.httpStatus < 300;
	const reason = redact(hint && noFailureStatus ? `${words.message}. ${hint}` : words.message, words.secret);
	const message = words.namesItem && itemIndex !== undefined ? `Item ${itemIndex}: ${reason}` : reason;
	const describe = [words.description, hint].filter(Boolean).join(' · ');
	const description = describe ? redact(describe, words.secret) : undefined;
	const error =
		clean.httpStatus === undefined
			? new NodeOperationError(node, message, { itemIndex, description })
			: new NodeApiError(node, clean as unknown as JsonObject, {
					message,
					description,
					httpCode: clean.httpStatus ? String(clean.httpStatus) : undefined,
					itemIndex,
				});
	// `reason`: the message without the item, for an agent's tool result.
	const context: IDataObject = { ...clean, reason };
	delete context.itemIndex; // n8n keeps the item itself
	Object.assign(error.context, context);
	return error;
}

/** The facts of any error: ours carry them, others (n8n's, unexpected ones) get nulls. */
export function errorFacts(error: unknown) {
	const context = ((error as { context?: IDataObject } | null | undefined)?.context ??
		{}) as IDataObject;
	const status = context.httpStatus;
	return {
		code: typeof context.code === 'string' ? context.code : null,
		httpStatus: typeof status === 'number' && status > 0 ? status : null,
		requestId: typeof context.requestId === 'string' ? context.requestId : null,
		charge: (typeof context.charge === 'string' ? context.charge : 'not_sent') as ChargeOutcome,
		apiMessage: typeof context.apiMessage === 'string' ? context.apiMessage : null,
		sessionId: typeof context.sessionId === 'string' ? context.sessionId : null,
		parameter: typeof context.parameter === 'string' ? context.parameter : null,
		reason: typeof context.reason === 'string' ? context.reason : errorMessage(error),
	};
}

export function errorMessage(error: unknown): string {
	const message = (error as { message?: unknown } | null | undefined)?.message;
	return typeof message === 'string' ? message : String(error);
}
