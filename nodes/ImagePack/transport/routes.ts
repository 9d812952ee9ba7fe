/**
 * The API's routes (API document §4) as data: method, path, the scope each needs (§5), whether it
 * costs credits, and what a 404 on it means. Everything route-specific the transport and the error
 * messages need is read from here.
 */
import type { IHttpRequestMethods } from 'n8n-workflow';

import { DEFAULT_TIMEOUT_MS, DOWNLOAD_TIMEOUT_MS, GENERATE_TIMEOUT_MS } from './limits';

export type Scope = 'generate:write' | 'assets:read' | 'documents:read';

export interface Route {
	method: IHttpRequestMethods;
	/** The path, or the prefix of paths that take an id or a file name. */
	path: string;
	scope: Scope;
	/** Costs credits: a failure after sending may have been charged. */
	paid: boolean;
	/** The whole call by default, retries and waits included. */
	timeoutMs: number;
	/** What a 404 means here. */
	notFound?: string;
}

export const PUBLICATIONS_PATH = '/api/v1/image-pack-publications';

export const ROUTES = {
	generate: {
		method: 'POST',
		path: '/api/v1/generate',
		scope: 'generate:write',
		paid: true,
		timeoutMs: GENERATE_TIMEOUT_MS,
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

/** Which operations each scope unlocks, for messages that tell the user what to tick. */
export const SCOPE_OPERATIONS: Record<Scope, string> = {
	'generate:write': 'Generate',
	'assets:read':
		'Download File, the image downloads of Generate and Get Publication, and the image links of Generate',
	'documents:read': 'Get Publication, Get Many Publications and the Image Pack Trigger',
};

/** The route a path on the API's origin belongs to (a file reference may name any path). */
export function routeOf(pathAndQuery: string): Route | undefined {
	const path = pathAndQuery.split('?')[0];
	if (path === ROUTES.generate.path) return ROUTES.generate;
	if (path.startsWith(ROUTES.getPublication.path)) return ROUTES.getPublication;
	if (path === ROUTES.listPublications.path) return ROUTES.listPublications;
	if (path.startsWith(ROUTES.file.path)) return ROUTES.file;
	return undefined;
}

/** The scope a path needs, as the API document lists them. */
export function scopeForPath(path: string): Scope | undefined {
	return routeOf(path)?.scope;
}
