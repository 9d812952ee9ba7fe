/**
 * Every error code the node raises or the API answers with (the API's: invalid_request,
 * invalid_model, reference_image_missing, unauthorized, invalid_api_key, insufficient_credits,
 * insufficient_scope, session_not_found, rate_limited, new_user_daily_limit, internal_error), one
 * row each, and all that depends on a code is read from its row: adding a code is adding a row.
 * The service's own messages are Chinese and may change, so the node goes by the code only and
 * keeps the API's message as detail. A code the API adds later is not in the table: it reaches the
 * user as the API sent it, with a message chosen by its HTTP status, and the defaults below.
 */

/**
 * Which operations each scope of an API key unlocks (the API's three: generate:write for generating,
 * assets:read for files, documents:read for both publication endpoints), for messages that tell the
 * user what to tick.
 */
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

interface Row {
	/**
	 * The English message (by route where that matters). None: the code is raised with a message of
	 * its own (naming a parameter, a cap, a wait), or the HTTP status decides.
	 */
	message?: string | ((route: RouteFacts | undefined, httpStatus: number) => string);
	/** What a model, or the person it talks to, can do next: the end of the tool's error text. */
	next?: string;
	/**
	 * Retry On Fail sends a Generate item refused with this code again: a try a second later can pass.
	 * Executions → Retry sends every refused item again (its cause may have been fixed). Neither sends
	 * a generation that may have been charged, whatever its code (generate/verdict.ts).
	 */
	retryOnFail?: true;
	/** Holds for every request with this key: Generate asks no further image links. */
	keyWide?: true;
	/** Cut short by the poll's time: the trigger delivers what it completed. */
	endsPoll?: true;
	/** The service did no work: the transport waits the Retry-After and sends again, a generation too. */
	retryAfter?: true;
	/** The service's own failure, refunded: a 5xx with this code cost nothing (a gateway's 5xx may have). */
	refunded?: true;
	/** The user stopped the execution: nothing continues, so no error items either. */
	stopped?: true;
}

export const CODES = {
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
		keyWide: true,
	},
	invalid_api_key: {
		message:
			'The API key is invalid, revoked or expired: create a new key in the developer center and update the Image Pack API credential',
		next: 'Do not retry: the user must create a new API key and update the Image Pack API credential.',
		keyWide: true,
	},
	insufficient_credits: {
		message:
			'Not enough credits for this generation: top up the account (the service’s message states the credits needed and available)',
		next: 'Do not retry: tell the user to top up the Image Pack account, or ask for fewer images, a lower resolution or a cheaper model.',
	},
	insufficient_scope: {
		message: (route) =>
			route
				? `The API key lacks the ${route.scope} scope, which ${SCOPE_OPERATIONS[route.scope]} need: add it to the key in the developer center`
				: 'The API key lacks the scope this operation needs',
		next: 'Do not retry: the user must add the missing scope to the API key in the developer center.',
		keyWide: true,
	},
	session_not_found: {
		message: 'The session does not exist or belongs to another account',
		next: 'Call again without a session id, or with the session_id returned by an earlier successful call.',
	},
	rate_limited: {
		message: 'The API key is over its rate limit',
		next: 'Wait a minute before calling again.',
		retryOnFail: true,
		endsPoll: true,
		retryAfter: true,
	},
	new_user_daily_limit: {
		message:
			'Accounts younger than 7 days may spend at most 2000 credits in 24 hours, and this account reached that limit',
		next: 'Do not retry: new accounts may spend 2000 credits per 24 hours; tell the user to try again later.',
	},
	internal_error: {
		// The refund promise belongs to generate; on the read endpoints it is just a server failure.
		message: (route, status) =>
			route?.paid
				? 'The generation failed on the service; the reserved credits were refunded'
				: `The Image Pack API failed with an internal error (HTTP ${status})`,
		next: 'You may call once more; if it fails again, tell the user.',
		retryOnFail: true,
		refunded: true,
	},
	not_found: {
		message: (route) => route?.notFound ?? 'Not found, or it belongs to another account',
		next: 'Check the id: list publications with the get-many operation, or use a file from an earlier result.',
	},
	// Answers that carry no usable code.
	non_json_response: { message: 'The Image Pack API answered with something that is not JSON' },
	unknown_error: {}, // JSON without error.code: the HTTP status speaks
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
	server_fault: {}, // an answer against the API's contract (a list without items, ids going back)
	// No answer.
	timeout: {
		next: 'Tell the user to check the session on the Image Pack website before asking again.',
		endsPoll: true,
	},
	network_error: {
		next: 'Tell the user the Image Pack API could not be reached; do not retry now.',
		retryOnFail: true, // refused only when nothing left this machine
	},
	cancelled: { retryOnFail: true, keyWide: true, stopped: true },
	// The node's own, found before or after a request: their messages name the parameter, cap or file.
	invalid_parameter: { next: 'Correct that argument using the allowed values and call again.' },
	invalid_credential: {},
	credit_cap_reached: {
		next: 'Do not call again in this conversation turn: tell the user the credit cap of this workflow was reached.',
	},
	unknown_handle: {},
	// A record says a generation was (or may have been) paid for already (generate/verdict.ts, generate/durable.ts).
	interrupted_send: {
		next: 'Do not call again with the same arguments: the generation may have run and been charged; tell the user to check the session on the Image Pack website.',
	},
	other_key: {
		next: 'Do not call again with the same arguments: tell the user this generation was made under another API key, and to check its session on the Image Pack website.',
	},
	idempotency_key_used: {
		next: 'Do not call again with this idempotency key: it was used already; tell the user.',
	},
	record_failed: {
		next: 'Nothing was sent: call again in a moment; if it fails again, tell the user.',
		retryOnFail: true,
	},
	file_too_large: {},
	not_api_file: {},
	too_many_results: {},
	no_publications: {},
	overlap_too_large: {},
	account_unconfirmed: {}, // the trigger could not tell whose its cursor is: the next poll asks again
} as const satisfies Record<string, Row>;

/** A code of the table: the compiler checks every code the node raises. */
export type Code = keyof typeof CODES;

declare const unlisted: unique symbol;
/** A code the API sent that the table does not list (one added after this version); see `codeOf`. */
export type NewCode = string & { readonly [unlisted]: true };

export type ErrorCode = Code | NewCode;

export function isCode(code: string): code is Code {
	return Object.prototype.hasOwnProperty.call(CODES, code);
}

/** A code as the API (or a stored error) gives it: the table's, or kept as it came. */
export function codeOf(text: string): ErrorCode {
	return isCode(text) ? text : (text as NewCode);
}

/** Everything about a code; a code the table lacks gets the defaults (all off, no words). */
export function rule(code: ErrorCode | undefined): Row {
	return code !== undefined && isCode(code) ? CODES[code] : {};
}

/** The English message of an API error, by code; a code without one says what the status means. */
export function englishMessage(
	{ code, httpStatus }: { code: ErrorCode; httpStatus: number },
	route?: RouteFacts,
): string {
	const words = rule(code).message;
	const known = typeof words === 'function' ? words(route, httpStatus) : words;
	if (known) return known;
	if (httpStatus === 404) return CODES.not_found.message(route);
	if (httpStatus >= 500) return `The Image Pack API failed with HTTP ${httpStatus}`;
	return `The Image Pack API returned an error (code "${code}", HTTP ${httpStatus})`;
}
