/**
 * Every error the package raises is built here, by `imagePackError`, and carries its facts
 * (`ErrorFacts`: the code, the HTTP status, the request id, what the failure cost …), decided once
 * where the request was made. Callers read the facts with `errorFacts`, never the text; the error
 * item and the tool's error item are derived from them. What a code means: codes.ts.
 */
import type { IDataObject, INode, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { type ErrorCode, codeOf } from './codes';

/** What a failure cost, as far as the node can know; decided where the request was made. */
export type ChargeOutcome = 'not_sent' | 'not_charged' | 'may_have_been_charged';

/** The one rule for "sent, and no clear answer came back": it may have run and been charged. */
export function mayHaveBeenCharged(facts: { charge: ChargeOutcome }): boolean {
	return facts.charge === 'may_have_been_charged';
}

/** For a person, after a generation that may have run: the session to check. */
export function chargeHint(sessionId?: string): string {
	const where = sessionId ? `session ${sessionId}` : 'the newest "API generation" session';
	return `The generation may have run and may have been charged: check ${where} on the website before running it again`;
}

/** Everything known about a failure: the one shape inside the node. */
export interface ErrorFacts {
	/** The code (codes.ts), or one the API added later; unset only on errors that are not ours. */
	code?: ErrorCode;
	/** The HTTP status of the answer; 0 when the request got none (network, timeout); unset when no request was made. */
	httpStatus?: number;
	requestId?: string;
	charge: ChargeOutcome;
	/** The service's own message (Chinese by default). */
	apiMessage?: string;
	/** The parameter at fault, for `invalid_parameter`. */
	parameter?: string;
	/** The session a generation that may have been charged belongs to (none: a new session). */
	sessionId?: string;
	itemIndex?: number;
	/** What happened in English, without the item: set on every error read back (`errorFacts`). */
	reason?: string;
}

/** The description shown under the message: everything support needs to find the request. */
export function errorDescription(
	facts: Pick<ErrorFacts, 'code' | 'httpStatus' | 'requestId' | 'apiMessage'>,
	extra?: string,
): string {
	const parts = [`code: ${facts.code}`, `HTTP status: ${facts.httpStatus ?? 0}`];
	if (facts.requestId) parts.push(`request id: ${facts.requestId}`);
	if (facts.apiMessage) parts.push(`API message: ${facts.apiMessage}`);
	if (extra) parts.push(extra);
	return parts.join(' · ');
}

/** Removes a secret from text that may end up in an error, a log or an output item. */
export function redact(text: string, secret: string | undefined): string {
	if (!secret || secret.length < 4) return text;
	return text.split(secret).join('sk_***');
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
	facts: ErrorFacts & { code: ErrorCode },
	words: ErrorWords,
): NodeApiError | NodeOperationError {
	const clean = { ...facts };
	delete clean.reason; // a fact read back: the reason is this error's message
	for (const [key, value] of Object.entries(clean)) {
		if (typeof value === 'string') Object.assign(clean, { [key]: redact(value, words.secret) });
	}
	const { itemIndex } = clean;
	// The description always says a generation may have run; the message too when the service gave
	// no failure status of its own (no answer, or a 2xx that could not be read).
	const hint = mayHaveBeenCharged(clean) ? chargeHint(clean.sessionId) : undefined;
	const noFailureStatus = !clean.httpStatus || clean.httpStatus < 300;
	// A reported-again failure's words carry the hint already.
	const hinted = hint && noFailureStatus && !words.message.endsWith(hint);
	const reason = redact(
		hinted ? `${words.message}. ${hint}` : words.message,
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

/** The facts of any error: ours carry them, others (n8n's, unexpected ones) only a reason. */
export function errorFacts(error: unknown): ErrorFacts & { reason: string } {
	const context = ((error as { context?: IDataObject } | null | undefined)?.context ??
		{}) as IDataObject;
	const text = (key: string) => (typeof context[key] === 'string' ? context[key] : undefined);
	const status = context.httpStatus;
	const code = text('code');
	return {
		code: code === undefined ? undefined : codeOf(code),
		httpStatus: typeof status === 'number' && status >= 0 ? status : undefined,
		requestId: text('requestId'),
		charge: (text('charge') ?? 'not_sent') as ChargeOutcome,
		sessionId: text('sessionId'),
		parameter: text('parameter'),
		apiMessage: text('apiMessage'),
		reason: text('reason') ?? errorMessage(error),
	};
}

/** The facts as output fields (the error item, the tool's error item): each one there, null when unknown. */
export function factFields(facts: ErrorFacts) {
	return {
		code: facts.code ?? null,
		httpStatus: facts.httpStatus || null,
		requestId: facts.requestId ?? null,
		charge: facts.charge,
		sessionId: facts.sessionId ?? null,
		parameter: facts.parameter ?? null,
		apiMessage: facts.apiMessage ?? null,
	};
}

export function errorMessage(error: unknown): string {
	const message = (error as { message?: unknown } | null | undefined)?.message;
	return typeof message === 'string' ? message : String(error);
}
