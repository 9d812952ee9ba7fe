/**
 * Where a call goes and what bounds it: the credential, read and checked once per call (a poll, a
 * list search) or per item of an execution (its expressions resolve per item); the API's routes (API document §4) as data: method, path, the scope
 * each needs (§5), whether it costs credits, what a 404 on it means; and one call's bounds, a
 * deadline and the execution's cancel signal (Stop), merged into the signal every request, body read
 * and wait of the call listens to.
 */
import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	IDataObject,
	IExecuteFunctions,
	IHttpRequestMethods,
	ILoadOptionsFunctions,
	IPollFunctions,
} from 'n8n-workflow';
import { sleep } from 'n8n-workflow';
import { createHash } from 'crypto';

import type { RouteFacts } from '../shared/codes';
import { imagePackError } from '../shared/errors';
import { DEFAULT_TIMEOUT_MS, DOWNLOAD_TIMEOUT_MS } from './limits';

/** Where requests come from: operations, the trigger's polls, the editor's list searches. */
export type ApiContext = IExecuteFunctions | IPollFunctions | ILoadOptionsFunctions;

export const CREDENTIAL_TYPE = 'imagePackApi';

export interface Connection {
	/** The credential's base URL without trailing slashes, e.g. `https://example.com`. */
	baseUrl: string;
	apiKey: string;
	/**
	 * Who asks: a fingerprint of the key (`keyFingerprint`), kept with every record the node makes
	 * (never the key, never the n8n credential's id). Two fingerprints are the same key; different
	 * ones may still be one account (a replaced key), which only the API can tell (ownership.ts).
	 */
	fingerprint: string;
	/**
	 * The credential as read once, handed to n8n's authenticated helper with every request. Without
	 * it n8n decrypts the credential again per request, and in a poll that builds and disposes a
	 * whole expression isolate each time (≈ 60 ms of CPU per request in n8n 2.41).
	 */
	credential: ICredentialsDecrypted;
}

export function parseUrl(text: string, base?: string): URL | undefined {
	try {
		return new URL(text, base);
	} catch {
		return undefined;
	}
}

/**
 * 16 hex digits of SHA-256 over the server and the key: enough to tell keys apart, and a key of
 * 40+ random characters cannot be recovered from it.
 */
export function keyFingerprint(baseUrl: string, apiKey: string): string {
	return createHash('sha256')
		.update(`imagepack-key ${baseUrl.toLowerCase()} ${apiKey}`)
		.digest('hex')
		.slice(0, 16);
}

/** Reads and checks the credential: bad settings fail before anything is sent. */
export async function getConnection(
	ctx: ApiContext,
	itemIndex = 0,
	{ namesItem = false } = {},
): Promise<Connection> {
	const data = await ctx.getCredentials<ICredentialDataDecryptedObject>(CREDENTIAL_TYPE, itemIndex);
	return checkedConnection(ctx, data, itemIndex, namesItem);
}

function checkedConnection(
	ctx: ApiContext,
	data: ICredentialDataDecryptedObject,
	itemIndex: number,
	namesItem: boolean,
): Connection {
	const selected = ctx.getNode().credentials?.[CREDENTIAL_TYPE];
	const baseUrl = String(data.baseUrl ?? '')
		.trim()
		.replace(/\/+$/, '');
	const apiKey = String(data.apiKey ?? '').trim();
	const refuse = (message: string, description?: string) =>
		imagePackError(
			ctx.getNode(),
			{ code: 'invalid_credential', charge: 'not_sent', itemIndex },
			{ message, description, secret: apiKey, namesItem },
		);
	if (!/^https?:\/\/[^/]+/i.test(baseUrl) || !parseUrl(baseUrl)) {
		throw refuse(
			`The Base URL of the Image Pack API credential must be an http:// or https:// address (got "${baseUrl}")`,
		);
	}
	if (!apiKey.startsWith('sk_')) {
		throw refuse(
			'The API key of the Image Pack API credential must start with sk_',
			'Copy the whole key from the developer center; it is shown only once.',
		);
	}
	const credential: ICredentialsDecrypted = {
		id: selected?.id ?? '',
		name: selected?.name ?? '',
		type: CREDENTIAL_TYPE,
		data,
	};
	return { baseUrl, apiKey, fingerprint: keyFingerprint(baseUrl, apiKey), credential };
}

/**
 * Each item's connection. n8n resolves a credential's expressions per item (`getCredentials(type,
 * itemIndex)`: an agency's `{{ $json.apiKey }}`), so every request of item i goes with the key and
 * base URL item i resolves to. Items that resolve to the same values share one connection; a row
 * whose credential is bad fails alone, naming the item.
 *
 * Each read costs n8n a database query, a decryption and an expression pass (≈ 2.5 ms of CPU in
 * 2.41), so a run of three or more items first asks whether the credential depends on the item at
 * all (`sameForEveryItem`); when it does not, one read serves the whole run.
 */
export function connectionsPerItem(
	ctx: IExecuteFunctions,
): (itemIndex: number) => Promise<Connection> {
	const itemCount = ctx.getInputData().length;
	let forEveryItem: Promise<ItemFree> | undefined;
	const byValues = new Map<string, Connection>();
	return async (itemIndex) => {
		const probe = itemCount > 2 ? await (forEveryItem ??= sameForEveryItem(ctx, itemCount)) : {};
		const data =
			probe.all ??
			(itemIndex === 0 ? probe.first : undefined) ??
			(await ctx.getCredentials<ICredentialDataDecryptedObject>(CREDENTIAL_TYPE, itemIndex));
		const connection = checkedConnection(ctx, data, itemIndex, true);
		const values = `${connection.baseUrl}\n${connection.apiKey}`;
		const known = byValues.get(values);
		if (known) return known;
		byValues.set(values, connection);
		return connection;
	};
}

interface ItemFree {
	/** The credential every item of the run resolves to, when none of its fields depends on the item. */
	all?: ICredentialDataDecryptedObject;
	/** Item 0's, read while asking. */
	first?: ICredentialDataDecryptedObject;
}

/** The execution's answer, in the node's context data: it holds for every run of the node. */
const ITEM_FREE_KEY = 'imagePackCredentialItemFree';

/**
 * Whether the credential depends on the item. n8n hands a node only resolved values, so it is
 * resolved for item 0 and for two indexes past the input: there an expression that reads the item
 * (`$json`, `$binary`, `$input.item`, a paired `$('Node').item`) throws, and one that picks by
 * `$itemIndex % k` resolves otherwise at one of two neighbours. Equal values mean every item gets
 * them (plain text, `$vars`, `$('Config').first()`). The blind spot, documented: an item's field read
 * with `?.` and a fallback that item 0 also takes. The answer is kept for the execution's later runs
 * (a loop's batches), which then read once.
 */
async function sameForEveryItem(ctx: IExecuteFunctions, itemCount: number): Promise<ItemFree> {
	let memory: IDataObject = {};
	try {
		memory = ctx.getContext('node') as IDataObject;
	} catch {
		// No execution data to keep it in: asked again next run.
	}
	if (memory[ITEM_FREE_KEY] === false) return {};
	let first: ICredentialDataDecryptedObject | undefined;
	try {
		const itemZero = await ctx.getCredentials<ICredentialDataDecryptedObject>(CREDENTIAL_TYPE, 0);
		first = itemZero;
		if (memory[ITEM_FREE_KEY] === true) return { all: first };
		for (const beyond of [itemCount, itemCount + 1]) {
			if (
				!sameValues(
					itemZero,
					await ctx.getCredentials<ICredentialDataDecryptedObject>(CREDENTIAL_TYPE, beyond),
				)
			) {
				memory[ITEM_FREE_KEY] = false;
				return { first };
			}
		}
	} catch {
		memory[ITEM_FREE_KEY] = false;
		return { first };
	}
	memory[ITEM_FREE_KEY] = true;
	return { all: first, first };
}

function sameValues(a: ICredentialDataDecryptedObject, b: ICredentialDataDecryptedObject): boolean {
	const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
	for (const key of keys) {
		if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) return false;
	}
	return true;
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
