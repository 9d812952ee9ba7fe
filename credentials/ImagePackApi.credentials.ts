import type {
	ICredentialDataDecryptedObject,
	Icon,
	ICredentialTestRequest,
	ICredentialType,
	IHttpRequestOptions,
	INodeProperties,
} from 'n8n-workflow';

const REDIRECT_STATUSES = [301, 302, 303, 307, 308];

const onStatus = (value: number, message: string) =>
	({ type: 'responseCode', properties: { value, message } }) as const;

/**
 * Base URL + `sk_` API key, sent as `Authorization: Bearer <key>` (trimmed: keys pasted from the
 * developer center often carry a trailing space or newline).
 */
export class ImagePackApi implements ICredentialType {
	name = 'imagePackApi';

	displayName = 'Image Pack API';

	icon: Icon = {
		light: 'file:../nodes/ImagePack/imagePack.svg',
		dark: 'file:../nodes/ImagePack/imagePack.dark.svg',
	};

	documentationUrl = 'https://github.com/imagepack/n8n-nodes-imagepack#credentials';

	properties: INodeProperties[] = [
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: '',
			required: true,
			placeholder: 'https://example.com',
			description: 'Address of the Image Pack service, without /api (a trailing slash is fine)',
		},
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			placeholder: 'sk_...',
			description:
				'Key from the developer center (account → developer center → API keys). It starts with sk_ and needs the scopes of the operations you use: generate:write (Generate), assets:read (downloads), documents:read (publications and the trigger).',
		},
	];

	// A function, not a generic `={{…}}` header: n8n evaluates that expression in its expression
	// engine for every request, which in a trigger's catch-up (one request per publication) cost a
	// quarter of the drain's CPU and much of its garbage (docs/performance.md, draining a backlog).
	async authenticate(
		credentials: ICredentialDataDecryptedObject,
		requestOptions: IHttpRequestOptions,
	): Promise<IHttpRequestOptions> {
		requestOptions.headers = {
			...requestOptions.headers,
			Authorization: `Bearer ${String(credentials.apiKey ?? '').trim()}`,
		};
		return requestOptions;
	}

	// The cheapest call that proves the URL, the key and one scope: it reads at most one record and
	// spends no credits. The rules turn the API's status codes into messages that say what to fix.
	// Redirects are not followed: n8n would re-send the key to wherever one points.
	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{String($credentials.baseUrl).trim().replace(/\\/+$/, "")}}',
			url: '/api/v1/image-pack-publications',
			qs: { limit: 1 },
			method: 'GET',
			disableFollowRedirect: true,
		},
		rules: [
			...REDIRECT_STATUSES.map((status) =>
				onStatus(
					status,
					`The Base URL answered with a redirect (${status}); the key is never sent on to another address. Use the address the service itself answers on (check http versus https, the host and the port).`,
				),
			),
			onStatus(
				401,
				'The API key is missing, invalid, revoked or expired (401). Copy a valid key (it starts with sk_) from the developer center.',
			),
			onStatus(
				403,
				'The key is valid but lacks the documents:read scope (403 insufficient_scope), which Get Publication, Get Many Publications and the Image Pack Trigger need. Generate needs generate:write and downloads need assets:read.',
			),
			onStatus(
				404,
				'The Base URL answered, but not with the Image Pack API (404). Use the address of the service itself, without /api.',
			),
		],
	};
}
