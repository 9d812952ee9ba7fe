/**
 * Where a call goes and what bounds it: the API's routes (generate, the publication list and
 * detail, the file endpoint) as data: method, path, the scope each needs (generate:write,
 * documents:read, assets:read), whether it costs credits, what a 404 on it means; file references
 * resolved against the credential's origin; and one call's bounds, a deadline and the execution's
 * cancel signal (Stop), merged into the signal every request, body read and wait of the call
 * listens to. The credential itself is credential.ts.
 */
import type {
	IDataObject,
	IExecuteFunctions,
	IHttpRequestMethods,
	ILoadOptionsFunctions,
	IPollFunctions,
} from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import type { RouteFacts } from '../shared/codes';
import { DEFAULT_TIMEOUT_MS, DOWNLOAD_TIMEOUT_MS } from './limits';

/** Where requests come from: operations, the trigger's polls, the editor's list searches. */
export type ApiContext = IExecuteFunctions | IPollFunctions | ILoadOptionsFunctions;

/** A URL, or undefined for text that is none. */
export function parseUrl(text: string, base?: string): URL | undefined {
	try {
		return new URL(text, base);
	} catch {
		return undefined;
	}
}

/** A file reference that is no usable URL; the message says what was wrong. */
export class FileReferenceError extends Error {}

/** Percent-decoded text; a stray "%" that is no escape is kept as written. */
export function decodeName(text: string): string {
	try {
		return decodeURIComponent(text);
	} catch {
		return text;
	}
}

/**
 * Where a file reference points. The API's paths (`/api/file/<name>`), bare file names and full URLs
 * on the credential's own origin (scheme, host and port) get the API key; a URL on any other origin
 * is fetched without credentials.
 */
export function resolveFileReference(
	reference: string,
	baseUrl: string,
): { url: string; authenticated: boolean; fileName: string } {
	const trimmed = reference.trim();
	const root = baseUrl.trim().replace(/\/+$/, '');
	const base = parseUrl(`${root}/`);
	if (!base) throw new FileReferenceError(`the credential's Base URL "${root}" is not a valid URL`);
	const absolute = /^https?:\/\//i.test(trimmed);
	if (/^[a-z][a-z0-9+.-]*:/i.test(trimmed) && !absolute) {
		throw new FileReferenceError(
			`"${trimmed.slice(0, 100)}" is not an http(s) address; only http:// and https:// files are downloaded`,
		);
	}
	// A path on the API's origin, or a bare file name of the file endpoint.
	const path = trimmed.startsWith('/') ? trimmed : `/api/file/${encodeURIComponent(trimmed)}`;
	const url = parseUrl(absolute ? trimmed : `${root}${path}`);
	if (!url) throw new FileReferenceError(`"${trimmed.slice(0, 100)}" is not a valid URL`);
	const fileName = decodeName(url.pathname.split('/').pop() ?? '') || 'file';
	return { url: url.toString(), authenticated: url.origin === base.origin, fileName };
}

// Routes.

export interface Route extends RouteFacts {
	method: IHttpRequestMethods;
	/** The path, or the prefix of paths that take an id or a file name. */
	path: string;
	/** The whole call by default, retries and waits included; Generate's is its Timeout option. */
	timeoutMs?: number;
}

export interface Outgoing {
	route: Route;
	url: string;
	/** The path named in messages ("signed download link" off the API's origin). */
	path: string;
	qs?: IDataObject;
	body?: IDataObject;
	headers?: IDataObject;
	itemIndex?: number;
	/** With the credential (the API's origin) or without (signed links on the file host). */
	authenticated: boolean;
	/** Hand 3xx answers to the receiver (the file endpoint); otherwise a redirect is an error. */
	acceptRedirects?: boolean;
	/** For a paid route: the session to check when the generation may have run. */
	sessionId?: string;
}

export interface CallOptions {
	itemIndex?: number;
	/** The whole call, retries and waits included; default the route's. */
	timeoutMs?: number;
	/** An instant (epoch ms) the call ends by, whatever `timeoutMs` says: a poll's own deadline. */
	deadline?: number;
}

export const PUBLICATIONS_PATH = '/api/v1/image-pack-publications';

export const ROUTES = {
	generate: {
		method: 'POST',
		path: '/api/v1/generate',
		scope: 'generate:write',
		paid: true,
	},
	listPublications: {
		method: 'GET',
		path: PUBLICATIONS_PATH,
		scope: 'documents:read',
		paid: false,
		timeoutMs: DEFAULT_TIMEOUT_MS,
	},
	getPublication: {
		method: 'GET',
		path: `${PUBLICATIONS_PATH}/`,
		scope: 'documents:read',
		paid: false,
		timeoutMs: DEFAULT_TIMEOUT_MS,
		notFound: 'The publication does not exist or belongs to another account',
	},
	file: {
		method: 'GET',
		path: '/api/file/',
		scope: 'assets:read',
		paid: false,
		timeoutMs: DOWNLOAD_TIMEOUT_MS,
		notFound: 'The file does not exist or belongs to another account',
	},
} as const satisfies Record<string, Route>;

/** The route a path on the API's origin belongs to (a file reference may name any path). */
export function routeOf(pathAndQuery: string): Route | undefined {
	const path = pathAndQuery.split('?')[0];
	if (path === ROUTES.generate.path) return ROUTES.generate;
	if (path.startsWith(ROUTES.getPublication.path)) return ROUTES.getPublication;
	if (path === ROUTES.listPublications.path) return ROUTES.listPublications;
	if (path.startsWith(ROUTES.file.path)) return ROUTES.file;
	return undefined;
}

// A call's bounds.

/** n8n's cancel signal for this execution (Stop), where the context offers one (polls have none). */
export function executionCancelSignal(ctx: object): AbortSignal | undefined {
	const getter = (ctx as { getExecutionCancelSignal?: () => AbortSignal | undefined })
		.getExecutionCancelSignal;
	return typeof getter === 'function' ? getter.call(ctx) : undefined;
}

export interface CallScope {
	signal: AbortSignal;
	/** n8n's execution cancel signal, when the context has one (executions do, polls do not). */
	cancel?: AbortSignal;
	/** The time the call was given (after any deadline cut it), for messages. */
	timeoutMs: number;
	deadline: number;
}

/** Largest delay a timer takes; longer ones fire at once (Node clamps them to 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Opens a call of at most `timeoutMs`, cut to `deadline` (epoch ms) when one is given: a poll's
 * requests and waits all end by the poll's own deadline.
 */
export function openScope(ctx: ApiContext, timeoutMs?: number, deadline?: number): CallScope {
	let ms = Math.floor(Number(timeoutMs)) || DEFAULT_TIMEOUT_MS;
	if (deadline !== undefined) ms = Math.min(ms, deadline - Date.now());
	const bounded = Math.min(Math.max(1, ms), MAX_TIMER_MS);
	const cancel = executionCancelSignal(ctx);
	const timer = AbortSignal.timeout(bounded);
	return {
		signal: cancel ? AbortSignal.any([cancel, timer]) : timer,
		cancel,
		timeoutMs: bounded,
		deadline: Date.now() + bounded,
	};
}

export function remainingMs(scope: CallScope): number {
	return Math.max(1, scope.deadline - Date.now());
}

/** Waits `ms`, or rejects as soon as the call is stopped or out of time. */
export async function pause(ms: number, scope: CallScope): Promise<void> {
	if (scope.signal.aborted) throw new Error('aborted');
	let onAbort: (() => void) | undefined;
	try {
		await Promise.race([
			sleep(ms),
			new Promise<never>((_resolve, reject) => {
				onAbort = () => reject(new Error('aborted'));
				scope.signal.addEventListener('abort', onAbort, { once: true });
			}),
		]);
	} finally {
		if (onAbort) scope.signal.removeEventListener('abort', onAbort);
	}
}
