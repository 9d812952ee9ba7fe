/**
 * The API's routes (API document §4) as data: method, path, the scope each needs (§5), whether it
 * costs credits, and what a 404 on it means. Everything route-specific the transport and the error
 * messages need is read from here.
 */
import type { IDataObject, IHttpRequestMethods } from 'n8n-workflow';

import type { RouteFacts } from '../shared/codes';
import { DEFAULT_TIMEOUT_MS, DOWNLOAD_TIMEOUT_MS } from './limits';

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
