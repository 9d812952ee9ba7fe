/** What a failed request cost, decided once from how far it got, and the errors that say so. */
import type { IN8nHttpFullResponse } from 'n8n-workflow';

import { type Code, type ErrorCode, englishMessage } from '../shared/codes';
import {
	type ChargeOutcome,
	type ErrorFacts,
	errorDescription,
	imagePackError,
	redact,
} from '../shared/errors';
import type { ApiContext, Connection } from './connection';
import { headerValue } from './receive';
import { type Outgoing, type Route, routeOf } from './routes';
import type { CallScope } from './scope';

/** What an error answer says: its code, status, request id and the API's own message. */
export type ApiAnswer = Pick<ErrorFacts, 'requestId' | 'apiMessage'> & {
	code: ErrorCode;
	httpStatus: number;
};

/** How far a failed request got, which decides what it cost. */
export type Delivery = 'not_sent' | 'refused' | 'unknown';

function chargeOf(route: Route, delivery: Delivery): ChargeOutcome {
	if (delivery === 'not_sent') return 'not_sent';
	return route.paid && delivery === 'unknown' ? 'may_have_been_charged' : 'not_charged';
}

/** Why a request got no answer, by network error code (in the message of a `network_error`). */
const NETWORK_CAUSES: Record<string, string> = {
	ECONNREFUSED: 'the connection was refused',
	ENOTFOUND: 'the host name does not resolve',
	EAI_AGAIN: 'the host name could not be resolved right now',
	ECONNRESET: 'the connection was reset before the answer arrived',
	EPIPE: 'the connection was closed while sending',
	// axios' word for a body cut off mid-stream
	ERR_BAD_RESPONSE: 'the answer was cut off before it was complete',
	ERR_BODY_TOO_LARGE: 'the answer was larger than allowed',
};

/** Errors after which the request certainly never reached the server. */
export const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * The network error code (ECONNREFUSED, ECONNRESET, ...) of an error from n8n's helpers, if any. The
 * one place that reads an error's text: n8n's and the network's errors do not always carry a code.
 */
export function networkErrorCode(error: unknown): string | undefined {
	let current = error as { code?: unknown; cause?: unknown } | undefined;
	for (let depth = 0; current && depth < 4; depth++) {
		if (typeof current.code === 'string' && /^(E[A-Z_]+|ERR_[A-Z_]+)$/.test(current.code)) {
			return current.code;
		}
		current = current.cause as typeof current;
	}
	const message = String((error as Error | undefined)?.message ?? '');
	if (/timeout/i.test(message)) return 'ETIMEDOUT';
	if (/socket hang up/i.test(message)) return 'ECONNRESET';
	if (/aborted|premature close/i.test(message)) return 'ERR_BAD_RESPONSE';
	return undefined;
}

/** Builds the errors of one outgoing request, with its facts. */
export class Failures {
	constructor(
		private readonly ctx: ApiContext,
		private readonly connection: Connection,
		private readonly out: Outgoing,
		private readonly scope: CallScope,
	) {}

	/** The request got no (complete) answer: refused, reset, timed out, stopped. */
	network(code?: string) {
		const { out, scope } = this;
		const cancelled = scope.cancel?.aborted === true;
		const timedOut =
			!cancelled && (scope.signal.aborted || code === 'ETIMEDOUT' || code === 'ECONNABORTED');
		const notSent = code !== undefined && NOT_SENT_CODES.has(code) && !cancelled && !timedOut;
		// The raw code stays out of the message: NodeApiError swaps messages that mention well-known
		// network codes for a generic one.
		const message = cancelled
			? 'The execution was stopped while waiting for the Image Pack API'
			: timedOut
				? `The Image Pack API did not answer within ${Math.round(scope.timeoutMs / 100) / 10} seconds (the timeout covers the whole call, the answer's body included)`
				: notSent
					? `The Image Pack API could not be reached (${NETWORK_CAUSES[code]}): check the Base URL of the credential`
					: `The connection to the Image Pack API failed (${(code && NETWORK_CAUSES[code]) ?? 'network error'})`;
		const reason = cancelled ? 'cancelled' : timedOut ? 'timeout' : (code ?? 'unknown');
		return this.build(
			{
				code: cancelled ? 'cancelled' : timedOut ? 'timeout' : 'network_error',
				httpStatus: 0,
				charge: chargeOf(out.route, notSent ? 'not_sent' : 'unknown'),
			},
			message,
			`${out.route.method} ${out.path} · network error: ${reason}`,
		);
	}

	/** The service (or something in front of it) answered with an error. */
	answer(info: ApiAnswer, delivery: Delivery, extra?: string, message?: string) {
		return this.build(
			{
				code: info.code,
				httpStatus: info.httpStatus,
				requestId: info.requestId,
				apiMessage: info.apiMessage,
				charge: chargeOf(this.out.route, delivery),
			},
			message ?? englishMessage(info, routeOf(this.out.path)),
			errorDescription(info, extra),
		);
	}

	/** The file endpoint answered, but not with a redirect the node can use: `problem` says why. */
	fileAnswer(response: IN8nHttpFullResponse, code: Code, problem: string, message?: string) {
		const requestId = headerValue(response.headers, 'x-request-id');
		const info = { code, httpStatus: response.statusCode, requestId, apiMessage: problem };
		return this.answer(info, 'refused', undefined, message);
	}

	/** A redirect the node will not follow (the key stays home), naming where it pointed. */
	redirect(status: number, location: string | undefined, requestId: string | undefined) {
		const { out } = this;
		const target = location
			? redact(location, this.connection.apiKey).slice(0, 300)
			: '(no Location header)';
		return this.answer(
			{ code: 'unexpected_redirect', httpStatus: status, requestId },
			'unknown',
			`redirect target: ${target} · not followed, so the API key was not sent there`,
			`The Image Pack API answered ${out.route.method} ${out.path} with a redirect (HTTP ${status}) to ${target}, which the node does not follow: check the Base URL of the credential`,
		);
	}

	private build(
		facts: Omit<ErrorFacts, 'itemIndex' | 'sessionId'> & { code: ErrorCode },
		message: string,
		description: string,
	) {
		const { out } = this;
		return imagePackError(
			this.ctx.getNode(),
			{ ...facts, itemIndex: out.itemIndex, sessionId: out.route.paid ? out.sessionId : undefined },
			{ message, description, secret: this.connection.apiKey },
		);
	}
}
