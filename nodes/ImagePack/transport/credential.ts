/**
 * The credential: read and checked once per call (a poll, a list search) or per item of an execution
 * (its expressions resolve per item), once per run when it does not depend on the item. A bad Base
 * URL or key fails before anything is sent, naming the item.
 */
import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	IDataObject,
	IExecuteFunctions,
} from 'n8n-workflow';
import { createHash } from 'crypto';

import { imagePackError } from '../shared/errors';
import { type ApiContext, parseUrl } from './connection';

export const CREDENTIAL_TYPE = 'imagePackApi';

export interface Connection {
	/** The credential's base URL without trailing slashes, e.g. `https://example.com`. */
	baseUrl: string;
	apiKey: string;
	/**
	 * Who asks: a fingerprint of the key (`keyFingerprint`), kept with every record the node makes
	 * (never the key, never the n8n credential's id). Two fingerprints are the same key; different
	 * ones may still be one account (a replaced key), which only the API can tell (`proveOwnership`, transport/index.ts).
	 */
	fingerprint: string;
	/**
	 * The credential as read once, handed to n8n's authenticated helper with every request. Without
	 * it n8n decrypts the credential again per request, and in a poll that builds and disposes a
	 * whole expression isolate each time (≈ 60 ms of CPU per request in n8n 2.41).
	 */
	credential: ICredentialsDecrypted;
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

/**
 * The answer, in the node's context data, for the execution and credential it was given for: it
 * holds for the execution's later runs of the node (a loop's batches); a retry (a new execution,
 * maybe with the saved workflow's other credential) asks again.
 */
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
	const selected = ctx.getNode().credentials?.[CREDENTIAL_TYPE];
	const askedFor = `${ctx.getExecutionId?.() ?? ''} ${selected?.id ?? selected?.name ?? ''}`;
	const kept = memory[ITEM_FREE_KEY] as { for?: string; same?: boolean } | undefined;
	const known = kept?.for === askedFor ? kept.same : undefined;
	const keep = (same: boolean) => (memory[ITEM_FREE_KEY] = { for: askedFor, same });
	if (known === false) return {};
	let first: ICredentialDataDecryptedObject | undefined;
	try {
		const itemZero = await ctx.getCredentials<ICredentialDataDecryptedObject>(CREDENTIAL_TYPE, 0);
		first = itemZero;
		if (known === true) return { all: first };
		for (const beyond of [itemCount, itemCount + 1]) {
			if (
				!sameValues(
					itemZero,
					await ctx.getCredentials<ICredentialDataDecryptedObject>(CREDENTIAL_TYPE, beyond),
				)
			) {
				keep(false);
				return { first };
			}
		}
	} catch {
		keep(false);
		return { first };
	}
	keep(true);
	return { all: first, first };
}

function sameValues(a: ICredentialDataDecryptedObject, b: ICredentialDataDecryptedObject): boolean {
	const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
	for (const key of keys) {
		if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) return false;
	}
	return true;
}
