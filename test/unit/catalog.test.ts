/**
 * The node's model catalog, checked twice: against the API's own model table, billing example and
 * reference limits as literal numbers, and against the emulator's independent catalog for every
 * combination of model, ratio, resolution, quality, reference count and n.
 */
import {
	AUTO_MODEL,
	DEFAULT_QUALITY,
	DEFAULT_RATIO,
	IMAGE_COUNTS,
	MAX_PROMPT_LENGTH,
	MAX_REFERENCES,
	MODELS,
	MODEL_IDS,
	PURPOSES,
	QUALITIES,
	RATIOS,
	RESOLUTIONS,
	type PriceQuery,
	type Quality,
	type Ratio,
	type Resolution,
	autoCandidates,
	creditsPerImage,
	describePrice,
	estimateCredits,
	findModel,
} from '../../nodes/ImagePack/shared/catalog';
import { validateGenerate } from '../../nodes/ImagePack/actions/image/generate/request';
import { ValidationIssue } from '../../nodes/ImagePack/shared/parameters';
import {
	MODELS as EMULATOR_MODELS,
	type ModelId as EmulatorModelId,
	chooseAutoModel,
	dimensions,
	pricePerImage,
} from '../emulator/catalog';

const model = (id: string) => {
	const spec = findModel(id);
	if (!spec) throw new Error(`no model ${id}`);
	return spec;
};
const refIds = (count: number) => Array.from({ length: count }, (_, i) => `img_ref${i}`);
const query = (resolution: Resolution | '', referenceCount = 0, quality?: Quality): PriceQuery => ({
	resolution,
	quality,
	referenceCount,
});

describe('catalog: the API document’s table, as literal expectations', () => {
	it('lists the documented enumerations and defaults', () => {
		expect([...RATIOS]).toEqual(['1:1', '3:4', '4:5', '16:9', '9:16']);
		expect([...RESOLUTIONS]).toEqual(['1K', '2K', '4K']);
		expect([...QUALITIES]).toEqual(['low', 'medium', 'high']);
		expect([...IMAGE_COUNTS]).toEqual([1, 2, 4]);
		expect([...PURPOSES]).toEqual(['free', 'main_white', 'detail', 'buyer_show', 'pure_white']);
		expect(DEFAULT_RATIO).toBe('3:4');
		expect(DEFAULT_QUALITY).toBe('medium');
		expect(MAX_PROMPT_LENGTH).toBe(4000);
		expect(AUTO_MODEL).toBe('auto');
		expect(MAX_REFERENCES).toBe(16);
	});

	it('offers exactly the documented models, auto first', () => {
		expect(MODEL_IDS).toEqual([
			'auto',
			'nano-banana-2',
			'gpt-image-2',
			'gpt-image-2.5',
			'seedream-5-0-pro',
			'qwen-image-3.0-pro',
		]);
		expect(findModel('auto')).toBeUndefined();
		expect(findModel('dall-e-3')).toBeUndefined();
		expect(findModel('')).toBeUndefined();
		expect(findModel('GPT-IMAGE-2')).toBeUndefined();
	});

	it.each([
		// id, status, ratios, resolutions, default, quality, reference limit
		[
			'nano-banana-2',
			'Stable',
			['1:1', '3:4', '4:5', '16:9', '9:16'],
			['1K', '2K', '4K'],
			'2K',
			false,
			14,
		],
		[
			'gpt-image-2',
			'Stable',
			['1:1', '3:4', '4:5', '16:9', '9:16'],
			['1K', '2K', '4K'],
			'1K',
			true,
			16,
		],
		[
			'gpt-image-2.5',
			'Testing',
			['1:1', '3:4', '4:5', '16:9', '9:16'],
			['1K', '2K', '4K'],
			'1K',
			true,
			16,
		],
		['seedream-5-0-pro', 'Testing', ['1:1', '3:4', '16:9', '9:16'], ['1K', '2K'], '1K', false, 10],
		['qwen-image-3.0-pro', 'Testing', ['1:1', '3:4', '16:9', '9:16'], ['1K', '2K'], '1K', false, 3],
	])(
		'%s: %s, ratios, resolutions, default resolution, quality, reference limit',
		(id, status, ratios, resolutions, defaultResolution, usesQuality, limit) => {
			const spec = model(id);
			expect(spec.status).toBe(status);
			expect([...spec.ratios].sort()).toEqual([...ratios].sort());
			expect([...spec.resolutions]).toEqual(resolutions);
			expect(spec.defaultResolution).toBe(defaultResolution);
			expect(spec.usesQuality).toBe(usesQuality);
			expect(spec.referenceLimit).toBe(limit);
		},
	);

	it('names each model as the editor lists it', () => {
		expect(Object.fromEntries(MODELS.map((spec) => [spec.id, spec.displayName]))).toEqual({
			'nano-banana-2': 'Nano Banana 2',
			'gpt-image-2': 'GPT Image 2',
			'gpt-image-2.5': 'GPT Image 2.5',
			'seedream-5-0-pro': 'Seedream 5.0 Pro',
			'qwen-image-3.0-pro': 'Qwen Image 3.0 Pro',
		});
	});

	it('seedream and qwen lack 4:5 and 4K', () => {
		for (const id of ['seedream-5-0-pro', 'qwen-image-3.0-pro']) {
			expect(model(id).ratios).not.toContain('4:5');
			expect(model(id).resolutions).not.toContain('4K');
			expect(creditsPerImage(model(id), query('4K'))).toBeUndefined();
			expect(estimateCredits(id, '4:5', query('1K'), 1)).toBeUndefined();
			expect(estimateCredits(id, '1:1', query('4K'), 1)).toBeUndefined();
		}
	});

	it.each([
		['nano-banana-2', '1K', 12],
		['nano-banana-2', '2K', 16],
		['nano-banana-2', '4K', 23],
		['nano-banana-2', '', 16],
		['seedream-5-0-pro', '1K', 6],
		['seedream-5-0-pro', '2K', 12],
		['seedream-5-0-pro', '', 6],
		['qwen-image-3.0-pro', '1K', 6],
		['qwen-image-3.0-pro', '2K', 11],
		['qwen-image-3.0-pro', '', 6],
	] as const)(
		'%s at %s costs %i credits per image, whatever quality or references',
		(id, resolution, credits) => {
			for (const quality of [undefined, ...QUALITIES]) {
				for (const refs of [0, 1, 3]) {
					expect(creditsPerImage(model(id), query(resolution, refs, quality))).toBe(credits);
				}
			}
		},
	);

	it.each(['gpt-image-2', 'gpt-image-2.5'])(
		'%s: 5 / 15 / 50 by quality, plus 1 per reference image, at any resolution',
		(id) => {
			for (const resolution of ['', '1K', '2K', '4K'] as const) {
				expect(creditsPerImage(model(id), query(resolution, 0, 'low'))).toBe(5);
				expect(creditsPerImage(model(id), query(resolution, 0, 'medium'))).toBe(15);
				expect(creditsPerImage(model(id), query(resolution, 0, 'high'))).toBe(50);
				// Omitted quality is billed as medium.
				expect(creditsPerImage(model(id), query(resolution, 0))).toBe(15);
				expect(creditsPerImage(model(id), query(resolution, 3, 'high'))).toBe(53);
				expect(creditsPerImage(model(id), query(resolution, 16, 'low'))).toBe(21);
				expect(creditsPerImage(model(id), query(resolution, 2))).toBe(17);
			}
		},
	);

	it('reproduces the document’s reservation example and other rows', () => {
		// The API's reservation example: nano-banana-2 at 2K with n = 2 reserves 32 credits.
		expect(estimateCredits('nano-banana-2', '3:4', query('2K'), 2)).toBe(32);
		expect(estimateCredits('nano-banana-2', '3:4', query(''), 2)).toBe(32);
		// gpt-image-2 high with 3 references: 53 per image.
		expect(estimateCredits('gpt-image-2', '1:1', query('1K', 3, 'high'), 1)).toBe(53);
		expect(estimateCredits('gpt-image-2', '1:1', query('4K', 3, 'high'), 4)).toBe(212);
		expect(estimateCredits('gpt-image-2.5', '4:5', query('', 0), 2)).toBe(30);
		expect(estimateCredits('nano-banana-2', '16:9', query('4K'), 4)).toBe(92);
		expect(estimateCredits('seedream-5-0-pro', '9:16', query('2K', 10), 4)).toBe(48);
		expect(estimateCredits('qwen-image-3.0-pro', '1:1', query('2K', 3), 2)).toBe(22);
	});

	it("enforces the API's reference limits: 14, 16, 16, 10, 3", () => {
		// [limit, credits per image at 1K with that many references: GPT is billed as medium, +1 each]
		const limits: Record<string, [number, number]> = {
			'nano-banana-2': [14, 12],
			'gpt-image-2': [16, 31],
			'gpt-image-2.5': [16, 31],
			'seedream-5-0-pro': [10, 6],
			'qwen-image-3.0-pro': [3, 6],
		};
		for (const [id, [limit, credits]] of Object.entries(limits)) {
			expect(creditsPerImage(model(id), query('1K', limit))).toBe(credits);
			expect(creditsPerImage(model(id), query('1K', limit + 1))).toBeUndefined();
		}
	});

	it('knows no price for an unknown model', () => {
		expect(estimateCredits('dall-e-3', '1:1', query('1K'), 1)).toBeUndefined();
		expect(estimateCredits('', '1:1', query('1K'), 1)).toBeUndefined();
	});
});

describe('catalog: auto', () => {
	const ids = (ratio: Ratio, q: PriceQuery) => autoCandidates(ratio, q).map((spec) => spec.id);

	it('may route to every model that serves the ratio, resolution and reference count', () => {
		expect(ids('1:1', query(''))).toEqual([
			'nano-banana-2',
			'gpt-image-2',
			'gpt-image-2.5',
			'seedream-5-0-pro',
			'qwen-image-3.0-pro',
		]);
		expect(ids('4:5', query(''))).toEqual(['nano-banana-2', 'gpt-image-2', 'gpt-image-2.5']);
		expect(ids('1:1', query('4K'))).toEqual(['nano-banana-2', 'gpt-image-2', 'gpt-image-2.5']);
		expect(ids('1:1', query('', 4))).toEqual([
			'nano-banana-2',
			'gpt-image-2',
			'gpt-image-2.5',
			'seedream-5-0-pro',
		]);
		expect(ids('1:1', query('', 11))).toEqual(['nano-banana-2', 'gpt-image-2', 'gpt-image-2.5']);
		expect(ids('1:1', query('', 15))).toEqual(['gpt-image-2', 'gpt-image-2.5']);
		expect(ids('1:1', query('', 17))).toEqual([]);
	});

	it('estimates the highest price among its candidates, so a budget guard never undershoots', () => {
		// nano-banana-2 at its default 2K (16) beats GPT medium (15).
		expect(estimateCredits('auto', '3:4', query(''), 1)).toBe(16);
		// At 1K nano-banana-2 costs 12, GPT medium 15.
		expect(estimateCredits('auto', '3:4', query('1K'), 2)).toBe(30);
		// GPT's reference surcharge: 15 + 2 = 17 > 16.
		expect(estimateCredits('auto', '1:1', query('', 2), 1)).toBe(17);
		// 4K: nano 23 vs GPT 15 + 14.
		expect(estimateCredits('auto', '4:5', query('4K', 14), 1)).toBe(29);
		expect(estimateCredits('auto', '4:5', query('4K', 0), 4)).toBe(92);
		expect(estimateCredits('auto', '1:1', query('', 17), 1)).toBeUndefined();
	});
});

describe('catalog: describePrice', () => {
	it('describes every model in one line with its real numbers', () => {
		expect(describePrice(model('nano-banana-2'))).toBe(
			'12 at 1K, 16 at 2K, 23 at 4K credits per image',
		);
		expect(describePrice(model('seedream-5-0-pro'))).toBe('6 at 1K, 12 at 2K credits per image');
		expect(describePrice(model('qwen-image-3.0-pro'))).toBe('6 at 1K, 11 at 2K credits per image');
		for (const id of ['gpt-image-2', 'gpt-image-2.5']) {
			expect(describePrice(model(id))).toBe(
				'5 / 15 / 50 credits per image (low / medium / high quality) plus 1 per reference image',
			);
		}
		for (const spec of MODELS) expect(describePrice(spec)).not.toMatch(/undefined|NaN/);
	});
});

/*
 * Cross-check against the emulator (the service stand-in, written separately). For every request the
 * node accepts, the node's estimate must equal what the emulator reserves for the body the node sends;
 * the node must reject exactly what the emulator rejects, on the same parameter.
 */
type Verdict = { ok: true; reserved: number } | { ok: false; parameter: string };

const EMULATOR_PARAMETER: Record<string, string> = {
	ratio: 'ratio',
	resolution: 'resolution',
	ref_image_ids: 'referenceImageIds',
};

/** What the emulator would do with an explicit-model request (its model table's rules, in its order). */
function emulatorVerdict(
	id: EmulatorModelId,
	ratio: Ratio,
	resolution: Resolution | undefined,
	quality: Quality | undefined,
	references: number,
	n: number,
): Verdict {
	const spec = EMULATOR_MODELS[id];
	if (!spec.ratios.includes(ratio)) return { ok: false, parameter: 'ratio' };
	const resolved = resolution ?? spec.defaultResolution;
	if (!spec.resolutions.includes(resolved)) return { ok: false, parameter: 'resolution' };
	if (references > spec.referenceLimit) return { ok: false, parameter: 'ref_image_ids' };
	return {
		ok: true,
		reserved: pricePerImage(id, resolved, spec.usesQuality ? quality : undefined, references) * n,
	};
}

function nodeVerdict(parameters: Parameters<typeof validateGenerate>[0]) {
	try {
		return { ok: true as const, ...validateGenerate(parameters) };
	} catch (error) {
		// Anything but a ValidationIssue shows up as a mismatch naming the unexpected error.
		const parameter =
			error instanceof ValidationIssue ? error.parameter : `unexpected ${String(error)}`;
		return { ok: false as const, parameter };
	}
}

const RESOLUTION_CHOICES: Array<Resolution | ''> = ['', ...RESOLUTIONS];
const QUALITY_CHOICES: Array<Quality | ''> = ['', ...QUALITIES];

describe('catalog: cross-check with the emulator’s independent catalog', () => {
	it('has the same models, ratios, resolutions, defaults, quality use and reference limits', () => {
		expect(MODELS.map((spec) => spec.id).sort()).toEqual(Object.keys(EMULATOR_MODELS).sort());
		for (const spec of MODELS) {
			const other = EMULATOR_MODELS[spec.id as EmulatorModelId];
			expect([...spec.ratios].sort()).toEqual([...other.ratios].sort());
			expect([...spec.resolutions].sort()).toEqual([...other.resolutions].sort());
			expect(spec.defaultResolution).toBe(other.defaultResolution);
			expect(spec.usesQuality).toBe(other.usesQuality);
			expect(spec.referenceLimit).toBe(other.referenceLimit);
			expect(spec.status).toBe(other.status);
			// Every accepted ratio × resolution is a real pixel size on the service.
			for (const ratio of spec.ratios) {
				for (const resolution of spec.resolutions) {
					const { width, height } = dimensions(ratio, resolution);
					expect(width).toBeGreaterThan(0);
					expect(height).toBeGreaterThan(0);
				}
			}
		}
	});

	it('for every explicit model × ratio × resolution × quality × references (0..limit+1) × n: same verdict, estimate = reservation', () => {
		const mismatches: string[] = [];
		let accepted = 0;
		let rejected = 0;
		for (const spec of MODELS) {
			const id = spec.id as EmulatorModelId;
			for (const ratio of RATIOS) {
				for (const resolution of RESOLUTION_CHOICES) {
					for (const quality of QUALITY_CHOICES) {
						for (let references = 0; references <= spec.referenceLimit + 1; references++) {
							for (const n of IMAGE_COUNTS) {
								const label = `${id} ${ratio} ${resolution || 'default'} ${quality || 'no quality'} refs=${references} n=${n}`;
								const node = nodeVerdict({
									prompt: 'a ceramic mug on a table',
									referenceImageIds: refIds(references),
									model: id,
									ratio,
									resolution,
									quality,
									n,
									purpose: 'free',
									sessionId: '',
								});
								const direct = estimateCredits(
									id,
									ratio,
									query(resolution, references, quality || undefined),
									n,
								);
								if (!node.ok) {
									// What the node would send had it not rejected: the emulator must reject it too.
									const expected = emulatorVerdict(
										id,
										ratio,
										resolution || undefined,
										quality || undefined,
										references,
										n,
									);
									if (expected.ok)
										mismatches.push(
											`${label}: node rejected (${node.parameter}), emulator accepts`,
										);
									else if (EMULATOR_PARAMETER[expected.parameter] !== node.parameter) {
										mismatches.push(
											`${label}: node blames ${node.parameter}, emulator ${expected.parameter}`,
										);
									}
									if (direct !== undefined)
										mismatches.push(`${label}: estimateCredits ${direct} for a rejected request`);
									rejected++;
									continue;
								}
								accepted++;
								// The emulator judges the body the node actually sends.
								const { body } = node;
								const expected = emulatorVerdict(
									body.model as EmulatorModelId,
									body.ratio,
									body.resolution,
									body.quality,
									body.ref_image_ids?.length ?? 0,
									body.n,
								);
								if (!expected.ok) {
									mismatches.push(
										`${label}: node accepts, emulator rejects (${expected.parameter})`,
									);
									continue;
								}
								if (node.creditsEstimated !== expected.reserved) {
									mismatches.push(
										`${label}: node estimates ${node.creditsEstimated}, emulator reserves ${expected.reserved}`,
									);
								}
								if (direct !== expected.reserved) {
									mismatches.push(
										`${label}: estimateCredits ${direct}, emulator reserves ${expected.reserved}`,
									);
								}
								if ('quality' in body !== (spec.usesQuality && quality !== '')) {
									mismatches.push(`${label}: quality ${'quality' in body ? 'sent' : 'not sent'}`);
								}
							}
						}
					}
				}
			}
		}
		expect(mismatches.slice(0, 20)).toEqual([]);
		// Both sides of the matrix were exercised.
		expect(accepted).toBeGreaterThan(1000);
		expect(rejected).toBeGreaterThan(1000);
	});

	it('for auto: accepts what the emulator can route, and estimates at least what any model its rules may choose costs', () => {
		const mismatches: string[] = [];
		const prompts = {
			plain: 'a ceramic mug on a wooden table',
			// Asks for text in the image: the emulator's rule 2 prefers gpt-image-2.
			text: 'a ceramic mug with the slogan "Morning Fuel" and the price $12',
			none: '',
		};
		for (const ratio of RATIOS) {
			for (const resolution of RESOLUTION_CHOICES) {
				for (const quality of QUALITY_CHOICES) {
					for (let references = 0; references <= MAX_REFERENCES + 1; references++) {
						for (const n of IMAGE_COUNTS) {
							for (const [kind, prompt] of Object.entries(prompts)) {
								if (!prompt && references === 0) continue;
								const label = `auto ${ratio} ${resolution || 'default'} ${quality || 'no quality'} refs=${references} n=${n} ${kind}`;
								const node = nodeVerdict({
									prompt,
									referenceImageIds: refIds(references),
									model: 'auto',
									ratio,
									resolution,
									quality,
									n,
									purpose: 'free',
									sessionId: '',
								});
								const wanted = resolution || undefined;
								const chosen =
									references > MAX_REFERENCES
										? undefined
										: chooseAutoModel(prompt || undefined, references, ratio, wanted);
								// Rule 3 allows "another model that fits": every emulator model that fits is a possible choice.
								const fitting = (Object.keys(EMULATOR_MODELS) as EmulatorModelId[]).filter((id) => {
									const spec = EMULATOR_MODELS[id];
									return (
										references <= spec.referenceLimit &&
										spec.ratios.includes(ratio) &&
										(wanted === undefined || spec.resolutions.includes(wanted))
									);
								});
								const candidates = autoCandidates(ratio, query(resolution, references)).map(
									(spec) => spec.id,
								);
								if (candidates.join() !== fitting.join()) {
									mismatches.push(
										`${label}: candidates ${candidates.join()} vs emulator ${fitting.join()}`,
									);
								}
								if (!node.ok) {
									if (chosen)
										mismatches.push(
											`${label}: node rejected (${node.parameter}), emulator routes to ${chosen}`,
										);
									continue;
								}
								if (!chosen) {
									mismatches.push(`${label}: node accepts, emulator cannot route`);
									continue;
								}
								const { body } = node;
								if ('quality' in body) mismatches.push(`${label}: quality sent with auto`);
								const charge = (id: EmulatorModelId) =>
									pricePerImage(
										id,
										body.resolution ?? EMULATOR_MODELS[id].defaultResolution,
										undefined,
										references,
									) * n;
								if (node.creditsEstimated < charge(chosen)) {
									mismatches.push(
										`${label}: estimate ${node.creditsEstimated} < ${charge(chosen)} charged by ${chosen}`,
									);
								}
								const highest = Math.max(...fitting.map(charge));
								if (node.creditsEstimated !== highest) {
									mismatches.push(
										`${label}: estimate ${node.creditsEstimated}, highest fitting price ${highest}`,
									);
								}
							}
						}
					}
				}
			}
		}
		expect(mismatches.slice(0, 20)).toEqual([]);
	});
});
