/**
 * The only door to HTTP: one typed call per API route. Every request goes through n8n's helpers (so
 * n8n's proxy, TLS and SSRF settings apply) and is bounded in time (`timeoutMs`, cut to `deadline`),
 * by Stop and in size; the API key only ever goes to the credential's origin and is masked in
 * everything that comes back. See request.ts for the retry rules and what a failure costs.
 */
import type { IDataObject } from 'n8n-workflow';

import { rule } from '../shared/codes';
import { errorFacts } from '../shared/errors';
import type { ListPage } from '../shared/publications';
import { type Answer, type BrokenAnswer, jsonReceiver } from './answers';
import {
	type ApiContext,
	type CallOptions,
	type Outgoing,
	ROUTES,
	type Route,
	openScope,
} from './connection';
import { type Connection } from './credential';
import { send } from './request';

export type { Answer } from './answers';
export { PUBLICATIONS_PATH, executionCancelSignal } from './connection';
export { type Connection, connectionsPerItem, getConnection } from './credential';
import { signedFileLink } from './files';

export { downloadBinary, signedFileLink } from './files';

async function callJson<T>(
	ctx: ApiContext,
	connection: Connection,
	route: Route,
	request: Pick<Outgoing, 'qs' | 'body' | 'headers' | 'sessionId'> & { path?: string },
	options: CallOptions,
	tolerate?: (broken: BrokenAnswer, status: number, requestId?: string) => Answer<T>,
): Promise<Answer<T>> {
	const scope = openScope(ctx, options.timeoutMs ?? route.timeoutMs, options.deadline);
	const { path = route.path, ...rest } = request;
	const url = `${connection.baseUrl}${path}`;
	const out = { route, url, path, itemIndex: options.itemIndex, authenticated: true, ...rest };
	return await send(ctx, connection, out, scope, jsonReceiver<T>(connection, scope), tolerate);
}

/** GET /api/v1/image-pack-publications: one page of records above `sinceId`. */
export async function listPublications(
	ctx: ApiContext,
	connection: Connection,
	{ sinceId, limit }: { sinceId: number; limit: number },
	options: CallOptions = {},
): Promise<Answer<ListPage>> {
	const qs = { since_id: sinceId, limit };
	return await callJson<ListPage>(ctx, connection, ROUTES.listPublications, { qs }, options);
}

/** GET /api/v1/image-pack-publications/<id>: the record with its manifest. */
export async function getPublication(
	ctx: ApiContext,
	connection: Connection,
	id: number,
	options: CallOptions = {},
): Promise<Answer<IDataObject>> {
	const path = `${ROUTES.getPublication.path}${encodeURIComponent(String(id))}`;
	return await callJson<IDataObject>(ctx, connection, ROUTES.getPublication, { path }, options);
}

/**
 * POST /api/v1/generate. Paid: after a 2xx the generation ran, so an answer that cannot be read is
 * returned as `unreadable` instead of thrown, and the caller keeps what it can.
 */
export async function generate<T extends IDataObject>(
	ctx: ApiContext,
	connection: Connection,
	body: IDataObject & { session_id?: string },
	{ acceptLanguage, ...options }: CallOptions & { acceptLanguage: string; timeoutMs: number },
): Promise<Answer<T>> {
	const headers = { 'Accept-Language': acceptLanguage };
	const request = { body, headers, sessionId: body.session_id };
	const keepUnreadable = (broken: BrokenAnswer, status: number, requestId?: string) => ({
		body: {} as T,
		status,
		requestId,
		unreadable: `${broken.problem}${broken.snippet ? ` (it began: ${broken.snippet})` : ''}`,
	});
	return await callJson<T>(ctx, connection, ROUTES.generate, request, options, keepUnreadable);
}

/**
 * Ownership. Does a record made under another key belong to the account behind this key? The API has no "who
 * am I", so the node asks about something the record holds, and only two answers prove anything:
 *
 * - a publication's detail: 200 is this account's, 404 another account's (the API answers 404 for
 *   another account's record);
 * - a generated file (the API says a file is "requested with the same key" as its generation): the
 *   file endpoint's 302 is this account's (a stated assumption, tested both ways against the
 *   emulator; the redirect is not followed). Its 404 proves nothing: the file may have been cleaned
 *   up (the API does not state the endpoint's retention).
 *
 * Anything else — 401, 403 for a key without the scope, 429, 5xx, a timeout — is `unknown`, and the
 * caller then neither uses the record nor throws it away: it reports the record as uncertain, or
 * leaves the decision to a later poll. A Stop is not an answer: it is thrown.
 */

export type Ownership = 'same' | 'other' | 'unknown';

/** A verdict, and in words what it rests on (for hints and errors). */
export interface OwnershipVerdict {
	verdict: Ownership;
	reason: string;
}

/** What a record can show: a publication id it read, or a file it made. */
export type Evidence = { publicationId: number } | { fileUrl: string };

function isStop(error: unknown): boolean {
	return rule(errorFacts(error).code).stopped === true;
}

/** Asks the API whether `evidence` belongs to the account behind `connection`'s key. */
export async function proveOwnership(
	ctx: ApiContext,
	connection: Connection,
	evidence: Evidence,
	options: { itemIndex?: number; deadline?: number } = {},
): Promise<OwnershipVerdict> {
	const unknown = (what: string) => (error: unknown) => {
		if (isStop(error)) throw error; // a Stop is no answer
		return {
			verdict: 'unknown' as const,
			reason: `${what} could not be checked: ${errorFacts(error).reason}`,
		};
	};
	if ('publicationId' in evidence) {
		const id = evidence.publicationId;
		return await getPublication(ctx, connection, id, options).then(
			(): OwnershipVerdict => ({
				verdict: 'same',
				reason: `publication ${id} answers for this key`,
			}),
			(error: unknown): OwnershipVerdict =>
				errorFacts(error).httpStatus === 404
					? { verdict: 'other', reason: `publication ${id} is not this key's account's (404)` }
					: unknown(`publication ${id}`)(error),
		);
	}
	return await signedFileLink(ctx, connection, evidence.fileUrl, {
		itemIndex: options.itemIndex,
	}).then(
		(): OwnershipVerdict => ({
			verdict: 'same',
			reason: 'its file answers this key with a signed link',
		}),
		unknown('its file'),
	);
}
