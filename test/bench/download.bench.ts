/**
 * Benchmark 4: downloading 4 × 4K images with n8n's filesystem binary data mode. Runs inside a fresh
 * child process (test/bench/download-child.mjs) that samples its own RSS around `runDownload`; the
 * emulator and the file host live in another process, so their buffers do not count.
 */
import type { IBinaryData, INodeExecutionData, INodeParameters, INodeType } from 'n8n-workflow';

import { runNode, useFilesystemBinaryData } from '../harness/n8n';
import type { Figure } from './figures';
import { figure, formatValue } from './figures';

export type DownloadMode = 'generate' | 'download';

export interface DownloadRun {
	mode: DownloadMode;
	baseUrl: string;
	apiKey: string;
	/** Where n8n's filesystem binary data mode stores the files. */
	storageDir: string;
	images: number;
}

let nodeClass: (new () => INodeType) | undefined;

/** The action node class (see NodeClasses in env.ts for why the launcher hands it in). */
export function useNodeClass(ImagePack: new () => INodeType): void {
	nodeClass = ImagePack;
}

function run(options: DownloadRun, parameters: INodeParameters, items?: INodeExecutionData[]) {
	if (!nodeClass) throw new Error('call useNodeClass(ImagePack) first');
	return runNode({
		nodeType: new nodeClass(),
		parameters,
		items,
		credentials: { baseUrl: options.baseUrl, apiKey: options.apiKey },
	});
}

const generate4k = (images: number, downloadImages: boolean): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt: 'A white sneaker on a marble pedestal, soft studio light',
	model: 'nano-banana-2',
	ratio: '3:4',
	resolution: '4K',
	n: images,
	options: { downloadImages },
});

const downloadFile = (fileUrl: string): INodeParameters => ({
	resource: 'file',
	operation: 'download',
	fileUrl,
	binaryPropertyName: 'data',
});

/** Filesystem binary mode, then one small run of the same code path (modules, JIT, sockets). */
export async function prepareDownload(options: DownloadRun, warmupFileUrl?: string): Promise<void> {
	await useFilesystemBinaryData(options.storageDir);
	await run(options, { ...generate4k(1, !warmupFileUrl), resolution: '1K' });
	if (warmupFileUrl) await run(options, downloadFile(warmupFileUrl));
}

export interface DownloadResult {
	files: number;
	/** Size of each stored binary, as n8n recorded it. */
	sizes: number[];
}

function sizesOf(items: INodeExecutionData[]): number[] {
	const sizes: number[] = [];
	for (const item of items) {
		for (const binary of Object.values(item.binary ?? {}) as IBinaryData[]) sizes.push(binary.bytes ?? 0);
	}
	return sizes;
}

/**
 * The measured run: Generate n=4 at 4K with downloadImages (mode generate), or 4 items of Download
 * File (mode download; `fileUrls` from an earlier generate without downloads).
 */
export async function runDownload(options: DownloadRun, fileUrls: string[] = []): Promise<DownloadResult> {
	const [output] =
		options.mode === 'generate'
			? await run(options, generate4k(options.images, true))
			: await run(
					options,
					{ ...downloadFile('={{ $json.url }}') },
					fileUrls.map((url) => ({ json: { url } })),
				);
	const sizes = sizesOf(output);
	if (sizes.length !== options.images) throw new Error(`expected ${options.images} binaries, got ${sizes.length}`);
	return { files: sizes.length, sizes };
}

/** For mode download: generate the images first (no download) and return their file URLs. */
export async function generatedFileUrls(options: DownloadRun): Promise<string[]> {
	const [output] = await run(options, generate4k(options.images, false));
	const images = (output[0]?.json.images ?? []) as Array<{ url: string }>;
	return images.map((image) => image.url);
}

/** What download-child.mjs prints. */
export interface DownloadMeasurement extends DownloadResult {
	ms: number;
	baselineRss: number;
	peakRss: number;
	growth: { rss: number; heapUsed: number; external: number; arrayBuffers: number };
}

export function downloadFigures(
	cases: Array<{ label: string; measurement: DownloadMeasurement; meaningful: boolean }>,
): Figure[] {
	const group = '4. Download 4 × 4K images, n8n filesystem binary mode (fresh process each)';
	const figures: Figure[] = [];
	for (const { label, measurement, meaningful } of cases) {
		const image = Math.max(...measurement.sizes);
		figures.push(
			figure({ group, figure: `${label}: one image`, measured: image, unit: 'bytes' }),
			figure({
				group,
				figure: `${label}: peak RSS growth (heap ${formatValue(measurement.growth.heapUsed, 'bytes')}, buffers ${formatValue(measurement.growth.arrayBuffers, 'bytes')})`,
				measured: measurement.growth.rss,
				ideal: image,
				unit: 'bytes',
				...(meaningful
					? { maxRatio: 1.5 }
					: {
							target: 'n/a (image below RSS noise)',
							note: 'The emulator serves 1-bit palette PNGs (a 4K one is a few KiB), so RSS growth against it is only noise of the runtime; the realistic host in front of the emulator serves incompressible files of a real 4K PNG\'s size through the same 302 → signed-link path.',
						}),
			}),
		);
	}
	return figures;
}
