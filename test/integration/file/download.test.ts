/**
 * File → Download: the 302 followed without the key, binaries named and typed.
 * The node runs in a real n8n execution context against the emulator over real HTTP.
 */
import type { IDataObject } from 'n8n-workflow';

import { generate, useActionNode } from '../../harness/action-node';

const { emulator, run, runError } = useActionNode();

describe('Download File', () => {
	it('follows the 302 to the file host without Authorization and names the binary', async () => {
		const [generated] = await run(
			generate({ model: 'nano-banana-2', resolution: '1K', options: { downloadImages: false } }),
		);
		const image = (generated.json.images as IDataObject[])[0];
		await emulator.control.clearRequests();
		for (const fileUrl of [
			String(image.url),
			String(image.filename),
			`${emulator.baseUrl}${String(image.url)}`,
		]) {
			const [item] = await run({
				resource: 'file',
				operation: 'download',
				fileUrl,
				binaryPropertyName: 'photo',
			});
			expect(item.json).toEqual({
				filename: image.filename,
				mimeType: 'image/png',
				fileSize: expect.any(Number),
			});
			expect(item.binary!.photo.fileName).toBe(image.filename);
			expect(Buffer.from(item.binary!.photo.data, 'base64').length).toBe(item.json.fileSize);
		}
		const api = await emulator.control.requests({ route: 'file' });
		const files = await emulator.control.requests({ listener: 'files' });
		expect(api).toHaveLength(3);
		expect(files).toHaveLength(3);
		for (const entry of api) expect(entry.headers.authorization).toBe(`Bearer ${emulator.apiKey}`);
		for (const entry of files) expect(entry.headers.authorization).toBeUndefined();
	});

	it('Continue On Fail: a missing file is an error item, the others download', async () => {
		const [generated] = await run(generate({ options: { downloadImages: false } }));
		const url = String((generated.json.images as IDataObject[])[0].url);
		const output = await run(
			{ resource: 'file', operation: 'download', fileUrl: '={{ $json.url }}' },
			{ items: [{ json: { url } }, { json: { url: '/api/file/nope.png' } }], continueOnFail: true },
		);
		expect(output[0].binary!.data).toMatchObject({
			fileName: url.split('/').pop(),
			mimeType: 'image/png',
		});
		expect(output[1].json.error).toMatchObject({
			httpStatus: 404,
			requestId: expect.stringMatching(/^req_/),
		});
	});
});

it('never puts the API key in outputs or errors', async () => {
	const outputs: unknown[] = [];
	outputs.push(await run(generate({ n: 2 })));
	outputs.push(await run({ resource: 'publication', operation: 'getMany' }));
	await emulator.control.setCredits(emulator.accountId, 0);
	const error = await runError(generate());
	outputs.push({ message: error.message, description: error.description, context: error.context });
	expect(JSON.stringify(outputs)).not.toContain(emulator.apiKey);
});
