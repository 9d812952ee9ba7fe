/**
 * Image → Generate's image links (image_links): as an AI agent's tool always, otherwise with the Image
 * Links option. Each link is fetched here, without the key, and must serve the generated image; the
 * node itself downloads nothing for it. Real n8n execution contexts against the emulator.
 */
import { createHash } from 'node:crypto';
import type { IDataObject, INodeParameters } from 'n8n-workflow';

import { ImagePack } from '../../../nodes/ImagePack/ImagePack.node';
import {
	SIGNED_LINK_MARGIN_MS,
	SIGNED_LINK_VALIDITY_MS,
} from '../../../nodes/ImagePack/transport/limits';
import { useEmulator } from '../../harness/emulator';
import { runNode } from '../../harness/n8n';

const emulator = useEmulator();

interface Link {
	id: string | null;
	url: string | null;
	expires_at?: string;
	error?: string;
}
type Result = IDataObject & { images: IDataObject[]; image_links?: Link[] };

const generate = (parameters: INodeParameters = {}): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt: 'A green ceramic vase on a linen tablecloth',
	model: 'nano-banana-2',
	ratio: '1:1',
	resolution: '1K',
	...parameters,
});

/** Runs Generate once; as AI Agent 3.x calls a tool when `asTool`. */
async function run(
	parameters: INodeParameters,
	{ asTool = false, apiKey }: { asTool?: boolean; apiKey?: string } = {},
) {
	const [output] = await runNode({
		nodeType: new ImagePack(),
		parameters,
		items: [{ json: asTool ? { toolCallId: 'call_1' } : {} }],
		credentials: { baseUrl: emulator.baseUrl, apiKey: apiKey ?? emulator.apiKey },
		asTool,
	});
	return output;
}

const fileRequests = async () => await emulator.control.requests({ route: 'file' });
const fileHostRequests = async () => await emulator.control.requests({ listener: 'files' });

/** Fetches a link as a person's browser would: no key. Returns the bytes' sha256 and the type. */
async function open(url: string) {
	const response = await fetch(url, { redirect: 'manual' });
	expect(response.status).toBe(200);
	const bytes = Buffer.from(await response.arrayBuffer());
	return {
		sha256: createHash('sha256').update(bytes).digest('hex'),
		type: response.headers.get('content-type'),
	};
}

describe('Generate: image links', () => {
	it('as a tool: one link per image next to the answer, each serving its image without the key', async () => {
		const before = Date.now();
		const [item] = await run(generate({ n: 2 }), { asTool: true });
		const after = Date.now();
		const json = item.json as Result;
		expect(item.binary).toBeUndefined();
		// The answer stays as returned: the API's paths are untouched, the links sit beside them.
		expect(json.images.map((image) => image.url)).toEqual([
			expect.stringMatching(/^\/api\/file\//),
			expect.stringMatching(/^\/api\/file\//),
		]);
		const links = json.image_links!;
		expect(links.map((link) => link.id)).toEqual(json.images.map((image) => image.id));
		// Resolved with the key, one GET per image; the file host has seen nothing yet.
		const resolved = await fileRequests();
		expect(resolved).toHaveLength(2);
		for (const request of resolved) {
			expect(request.headers.authorization).toBe(`Bearer ${emulator.apiKey}`);
			expect(request.status).toBe(302);
		}
		expect(await fileHostRequests()).toHaveLength(0);

		const stored = new Map((await emulator.control.images()).map((image) => [image.id, image]));
		const validity = SIGNED_LINK_VALIDITY_MS - SIGNED_LINK_MARGIN_MS;
		for (const link of links) {
			expect(link.url).not.toContain(emulator.apiKey);
			expect(link.url!.startsWith(emulator.fileBaseUrl)).toBe(true);
			const expires = Date.parse(link.expires_at!);
			expect(expires).toBeGreaterThanOrEqual(before + validity);
			expect(expires).toBeLessThanOrEqual(after + validity);
			expect(await open(link.url!)).toEqual({
				sha256: stored.get(link.id!)!.sha256,
				type: 'image/png',
			});
		}
		const opened = await fileHostRequests();
		expect(opened).toHaveLength(2);
		for (const request of opened) expect(request.headers.authorization).toBeUndefined();
	});

	it('outside a tool: no links by default; with Image Links, links and nothing downloaded', async () => {
		const [plain] = await run(generate({ options: { downloadImages: false } }));
		expect(plain.json.image_links).toBeUndefined();
		expect(await fileRequests()).toHaveLength(0);

		const [linked] = await run(generate({ options: { downloadImages: false, imageLinks: true } }));
		const [link] = (linked.json as Result).image_links!;
		expect(link.url).toMatch(/^http:\/\/.+\/signed\//);
		expect(linked.binary).toBeUndefined();
		expect(await fileHostRequests()).toHaveLength(0);
		expect((await open(link.url!)).type).toBe('image/png');
	});

	it('with downloads and links, both: the binaries and the links', async () => {
		const [item] = await run(generate({ options: { imageLinks: true } }));
		expect(Object.keys(item.binary ?? {})).toEqual(['image_0']);
		expect((item.json as Result).image_links).toHaveLength(1);
	});

	it('as a tool with Image Links added and off: no links', async () => {
		const [item] = await run(generate({ options: { imageLinks: false } }), { asTool: true });
		expect(item.json.image_links).toBeUndefined();
		expect(await fileRequests()).toHaveLength(0);
	});

	it('One Item per Image: each item carries its own image_link', async () => {
		const output = await run(generate({ n: 2, options: { splitImages: true, imageLinks: true } }));
		expect(output).toHaveLength(2);
		for (const item of output) {
			const json = item.json as IDataObject & { image: IDataObject; image_link: Link };
			expect(json.image_links).toBeUndefined();
			expect(json.image_link.id).toBe(json.image.id);
			expect(json.image_link.url).toMatch(/\/signed\//);
		}
		expect(output[0].json.image_link).not.toEqual(output[1].json.image_link);
	});

	it('a key without assets:read: the paid call succeeds and says why the links are missing', async () => {
		const { key } = await emulator.control.createKey({ scopes: ['generate:write'] });
		const [item] = await run(generate({ n: 2 }), { asTool: true, apiKey: key });
		const json = item.json as Result;
		expect(json).toMatchObject({ ok: true, credits_charged: 24 });
		expect(json.error).toBeUndefined();
		expect(json.image_links).toHaveLength(2);
		for (const [index, link] of json.image_links!.entries()) {
			expect(link).toMatchObject({ id: json.images[index].id, url: null });
			expect(link.error).toMatch(
				/^No link: The API key lacks the assets:read scope, which .*image links of Generate need.* \(code insufficient_scope, HTTP 403, request id req_\w+\)\. The image was generated and charged; only its link is missing\.$/,
			);
		}
		// The scope holds for every image: one refused request, not one per image.
		expect(await fileRequests()).toHaveLength(1);
		expect(JSON.stringify(item)).not.toContain(key);
	});

	it('a link the service fails to make (503 after retries) is reported on its entry; the other image keeps its link', async () => {
		await emulator.control.injectFault({ route: 'file', kind: 'status', status: 503, count: 3 });
		const [item] = await run(generate({ n: 2 }), { asTool: true });
		const [first, second] = (item.json as Result).image_links!;
		expect(first.url).toBeNull();
		expect(first.error).toMatch(/^No link: .*HTTP 503.*The image was generated and charged/);
		expect(second.url).toMatch(/\/signed\//);
		expect(item.json.credits_charged).toBe(24);
	});
});
