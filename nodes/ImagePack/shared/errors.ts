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

export interface ApiErrorInfo {
	/** `error.code` from the body, or a code of ours for bodies that carry none. */
	code: string;
	httpStatus: number;
	requestId?: string;
	/** The service's own message (Chinese by default). */
	apiMessage?: string;
}

/**
 * One row per error code: `message`, the English message of the node's error (codes of the API
 * document §7 and of bodies that carry none), and `next`, what a model, or the person it talks to,
 * can do about it (the tool's error text). The charge words per outcome follow the table.
 */
const CODES: Record<string, { message?: string; next?: string }> = {
	invalid_request: {
		message: 'The Image Pack API rejected the request as invalid',
		next: 'Check the arguments against the tool description and call again.',
	},
	invalid_model: {
		message: 'The Image Pack API does not support the requested model',
		next: 'Use one of the listed models, or auto.',
	},
	reference_image_missing: {
		message:
			'A reference image no longer exists or does not belong to this account (it was deleted, cleaned up or is another account’s)',
		next: 'Use only image ids returned by earlier successful calls (images[].id), or none.',
	},
	unauthorized: {
		message: 'No API key reached the Image Pack API: check the Image Pack API credential',
		next: 'Do not retry: the user must fix the Image Pack API credential of this workflow (API key).',
	},
	invalid_api_key: {
		message:
			'The API key is invalid, revoked or expired: create a new key in the developer center and update the Image Pack API credential',
		next: 'Do not retry: the user must create a new API key and update the Image Pack API credential.',
	},
	insufficient_credits: {
		message:
			'Not enough credits for this generation: top up the account (the service’s message states the credits needed and available)',
		next: 'Do not retry: tell the user to top up the Image Pack account, or ask for fewer images, a lower resolution or a cheaper model.',
	},
	insufficient_scope: {
		message: 'The API key lacks the scope this operation needs',
		next: 'Do not retry: the user must add the missing scope to the API key in the developer center.',
	},
	session_not_found: {
		message: 'The session does not exist or belongs to another account',
		next: 'Call again without a session id, or with the session_id returned by an earlier successful call.',
	},
	rate_limited: {
		message: 'The API key is over its rate limit',
		next: 'Wait a minute before calling again.',
	},
	new_user_daily_limit: {
		message:
			'Accounts younger than 7 days may spend at most 2000 credits in 24 hours, and this account reached that limit',
		next: 'Do not retry: new accounts may spend 2000 credits per 24 hours; tell the user to try again later.',
	},
	internal_error: {
		message: 'The generation failed on the service; the reserved credits were refunded',
		next: 'You may call once more; if it fails again, tell the user.',
	},
	not_found: {
		message: 'Not found, or it belongs to another account',
		next: 'Check the id: list publications with the get-many operation, or use a file from an earlier result.',
	},
	non_json_response: { message: 'The Image Pack API answered with something that is not JSON' },
	expired_link: { message: 'The signed download link was refused (it may have expired)' },
	unexpected_redirect: {
		message: 'The Image Pack API answered with a redirect, which the node does not follow',
	},
	bad_redirect: { message: 'The file endpoint redirected somewhere the node does not follow' },
	no_signed_link: {
		message:
			'The file endpoint served the file itself instead of a signed link, so there is no link to open without the API key',
	},
	answer_too_large: {
		message: 'The Image Pack API answered with more data than an API answer can hold',
	},
	answer_cut_off: {
		message: 'The answer of the Image Pack API was cut off before it was complete',
	},
	// The node's own codes: their messages name the parameter, the cap or the wait.
	invalid_parameter: { next: 'Correct that argument using the allowed values and call again.' },
	credit_cap_reached: {
		next: 'Do not call again in this conversation turn: tell the user the credit cap of this workflow was reached.',
	},
	timeout: {
		next: 'Tell the user to check the session on the Image Pack website before asking again.',
	},
	network_error: {
		next: 'Tell the user the Image Pack API could not be reached; do not retry now.',
	},
};

const wordsOf = (code: string) =>
	Object.prototype.hasOwnProperty.call(CODES, code) ? CODES[code] : undefined;

/** What a model (or the person it talks to) can do after an error with this code, if anything. */
export function nextStep(code: string): string | undefined {
	return wordsOf(code)?.next;
}

/** Why a request got no answer, by network error code (in the message of a `network_error`). */
export const NETWORK_CAUSES: Record<string, string> = {
	ECONNREFUSED: 'the connection was refused',
	ENOTFOUND: 'the host name does not resolve',
	EAI_AGAIN: 'the host name could not be resolved right now',
	ECONNRESET: 'the connection was reset before the answer arrived',
	EPIPE: 'the connection was closed while sending',
	// axios' word for a body cut off mid-stream
	ERR_BAD_RESPONSE: 'the answer was cut off before it was complete',
	ERR_BODY_TOO_LARGE: 'the answer was larger than allowed',
};

/** What a failure cost, as far as the node can know; decided where the request was made. */
export type ChargeOutcome = 'not_sent' | 'not_charged' | 'may_have_been_charged';

/** Each charge outcome in words for a model (the tool's error text). */
export const CHARGE_WORDS: Record<ChargeOutcome, string> = {
	not_sent: 'Nothing was sent and no credits were used.',
	not_charged: 'The service refused or refunded the request: no credits were charged.',
	may_have_been_charged:
		'The generation may have run and may have been charged: do not call again automatically.',
};

/** …and for a person, after a generation that may have run: the session to check. */
export function chargeHint(sessionId?: string): string {
	const where = sessionId ? `session ${sessionId}` : 'the newest "API generation" session';
	return `The generation may have run and may have been charged: check ${where} on the website before running it again`;
}

/** Which operations each scope (API document §5) unlocks, for messages that tell the user what to tick. */
export const SCOPE_OPERATIONS = {
	'generate:write': 'Generate',
	'assets:read':
		'Download File, the image downloads of Generate and Get Publication, and the image links of Generate',
	'documents:read': 'Get Publication, Get Many Publications and the Image Pack Trigger',
} as const;

export type Scope = keyof typeof SCOPE_OPERATIONS;

/** What the route of a failed request adds to its message; the transport's route table knows it. */
export interface RouteFacts {
	scope: Scope;
	/** Costs credits: only then does an internal_error promise a refund. */
	paid: boolean;
	/** What a 404 means on this route. */
	notFound?: string;
}

/** The English message for an API error, by code; unknown codes still say what happened. */
export function englishMessage(info: ApiErrorInfo, route?: RouteFacts): string {
	const known = wordsOf(info.code)?.message;
	if (info.code === 'insufficient_scope' && route) {
		return `The API key lacks the ${route.scope} scope, which ${SCOPE_OPERATIONS[route.scope]} need: add it to the key in the developer center`;
	}
	if (info.code === 'not_found' || (info.httpStatus === 404 && !known)) {
		return route?.notFound ?? CODES.not_found.message!;
	}
	// The refund promise belongs to generate; on the read endpoints it is just a server failure.
	if (info.code === 'internal_error' && !route?.paid) {
		return `The Image Pack API failed with an internal error (HTTP ${info.httpStatus})`;
	}
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

/** Removes a secret from text that may end up in an error, a log or an output item. */
export function redact(text: string, secret: string | undefined): string {
	if (!secret || secret.length < 4) return text;
	return text.split(secret).join('sk_***');
}

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
	const clean = { ...facts };
	for (const [key, value] of Object.entries(clean)) {
		if (typeof value === 'string') Object.assign(clean, { [key]: redact(value, words.secret) });
	}
	const { itemIndex } = clean;
	// The description always says a generation may have run; the message too when the service gave
	// no failure status of its own (no answer, or a 2xx that could not be read).
	const hint = clean.charge === 'may_have_been_charged' ? chargeHint(clean.sessionId) : undefined;
	const noFailureStatus = !clean.httpStatus || clean.httpStatus < 300;
	const reason = redact(
		hint && noFailureStatus ? `${words.message}. ${hint}` : words.message,
		words.secret,
	);
	const message =
		words.namesItem && itemIndex !== undefined ? `Item ${itemIndex}: ${reason}` : reason;
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
		sessionId: typeof context.sessionId === 'string' ? context.sessionId : null,
		parameter: typeof context.parameter === 'string' ? context.parameter : null,
		apiMessage: typeof context.apiMessage === 'string' ? context.apiMessage : null,
		reason: typeof context.reason === 'string' ? context.reason : errorMessage(error),
	};
}

export function errorMessage(error: unknown): string {
	const message = (error as { message?: unknown } | null | undefined)?.message;
	return typeof message === 'string' ? message : String(error);
}
