/**
 * The service's model catalog (per model, as the API lists them: its ratios, resolutions, quality
 * levels, reference limit, credits per image and status) as data. The node's UI options, its request
 * validation and its credit estimates are all derived from this one table.
 */

export const RATIOS = ['1:1', '3:4', '4:5', '16:9', '9:16'] as const;
export const RESOLUTIONS = ['1K', '2K', '4K'] as const;
export const QUALITIES = ['low', 'medium', 'high'] as const;
export const IMAGE_COUNTS = [1, 2, 4] as const;
export const PURPOSES = ['free', 'main_white', 'detail', 'buyer_show', 'pure_white'] as const;

export type Ratio = (typeof RATIOS)[number];
export type Resolution = (typeof RESOLUTIONS)[number];
export type Quality = (typeof QUALITIES)[number];
export type ImageCount = (typeof IMAGE_COUNTS)[number];
export type Purpose = (typeof PURPOSES)[number];

export const DEFAULT_RATIO: Ratio = '3:4';
export const DEFAULT_QUALITY: Quality = 'medium';
export const MAX_PROMPT_LENGTH = 4000;
export const AUTO_MODEL = 'auto';

export const PURPOSE_LABELS: Record<Purpose, { name: string; description: string }> = {
	free: {
		name: 'Free',
		description: 'Free generation: the prompt only, no photography rules added',
	},
	main_white: {
		name: 'Main Image (Marketplace Hero)',
		description: 'Marketplace hero image rules',
	},
	detail: { name: 'Detail Shot', description: 'Close-up detail shot rules' },
	buyer_show: { name: 'Buyer Show', description: 'Customer-photo style rules' },
	pure_white: { name: 'Pure White', description: 'White background, no person' },
};

export interface ModelSpec {
	id: string;
	displayName: string;
	status: 'Stable' | 'Testing';
	ratios: readonly Ratio[];
	resolutions: readonly Resolution[];
	defaultResolution: Resolution;
	/** Only GPT models read `quality`; the others ignore it, so the node never sends it to them. */
	usesQuality: boolean;
	referenceLimit: number;
	/** Credits per image: by resolution, or by quality plus a surcharge per reference image. */
	price:
		| { by: 'resolution'; credits: Partial<Record<Resolution, number>> }
		| { by: 'quality'; credits: Record<Quality, number>; perReference: number };
}

const ALL_BUT_4_5 = RATIOS.filter((ratio) => ratio !== '4:5');
/** GPT Image 2 and 2.5 differ only in name and status. */
const GPT_IMAGE = {
	ratios: RATIOS,
	resolutions: RESOLUTIONS,
	defaultResolution: '1K',
	usesQuality: true,
	referenceLimit: 16,
	price: { by: 'quality', credits: { low: 5, medium: 15, high: 50 }, perReference: 1 },
} as const;

export const MODELS: readonly ModelSpec[] = [
	{
		id: 'nano-banana-2',
		displayName: 'Nano Banana 2',
		status: 'Stable',
		ratios: RATIOS,
		resolutions: RESOLUTIONS,
		defaultResolution: '2K',
		usesQuality: false,
		referenceLimit: 14,
		price: { by: 'resolution', credits: { '1K': 12, '2K': 16, '4K': 23 } },
	},
	{ id: 'gpt-image-2', displayName: 'GPT Image 2', status: 'Stable', ...GPT_IMAGE },
	{ id: 'gpt-image-2.5', displayName: 'GPT Image 2.5', status: 'Testing', ...GPT_IMAGE },
	{
		id: 'seedream-5-0-pro',
		displayName: 'Seedream 5.0 Pro',
		status: 'Testing',
		ratios: ALL_BUT_4_5,
		resolutions: ['1K', '2K'],
		defaultResolution: '1K',
		usesQuality: false,
		referenceLimit: 10,
		price: { by: 'resolution', credits: { '1K': 6, '2K': 12 } },
	},
	{
		id: 'qwen-image-3.0-pro',
		displayName: 'Qwen Image 3.0 Pro',
		status: 'Testing',
		ratios: ALL_BUT_4_5,
		resolutions: ['1K', '2K'],
		defaultResolution: '1K',
		usesQuality: false,
		referenceLimit: 3,
		price: { by: 'resolution', credits: { '1K': 6, '2K': 11 } },
	},
];

export const MODEL_IDS = [AUTO_MODEL, ...MODELS.map((model) => model.id)];

export function findModel(id: string): ModelSpec | undefined {
	return MODELS.find((model) => model.id === id);
}

/** The highest reference count any model accepts: the bound `auto` can still route. */
export const MAX_REFERENCES = Math.max(...MODELS.map((model) => model.referenceLimit));

export interface PriceQuery {
	/** '' means the model's default resolution. */
	resolution: Resolution | '';
	/** Omitted quality is billed as medium on GPT models. */
	quality?: Quality;
	referenceCount: number;
}

/** Credits one image costs on this model, or undefined when the model cannot serve the query. */
export function creditsPerImage(model: ModelSpec, query: PriceQuery): number | undefined {
	if (query.referenceCount > model.referenceLimit) return undefined;
	const resolution = query.resolution || model.defaultResolution;
	if (!model.resolutions.includes(resolution)) return undefined;
	if (model.price.by === 'quality') {
		return (
			model.price.credits[query.quality ?? DEFAULT_QUALITY] +
			model.price.perReference * query.referenceCount
		);
	}
	return model.price.credits[resolution];
}

/** Models `auto` may route a request to: every model that can serve its ratio, resolution and references. */
export function autoCandidates(ratio: Ratio, query: PriceQuery): ModelSpec[] {
	return MODELS.filter(
		(model) => model.ratios.includes(ratio) && creditsPerImage(model, query) !== undefined,
	);
}

/**
 * Credits a request reserves, or undefined when no model can serve it (ratio, resolution or
 * references). For `auto` the service does not say which model it picks, so the estimate is the
 * highest price among the models it may pick: a budget guard must never undershoot.
 */
export function estimateCredits(
	modelId: string,
	ratio: Ratio,
	query: PriceQuery,
	n: ImageCount,
): number | undefined {
	const candidates =
		modelId === AUTO_MODEL
			? autoCandidates(ratio, query)
			: [findModel(modelId)].filter((model) => model?.ratios.includes(ratio));
	const prices = candidates
		.map((model) => (model ? creditsPerImage(model, query) : undefined))
		.filter((price): price is number => price !== undefined);
	return prices.length ? Math.max(...prices) * n : undefined;
}

/** One line for the UI: what an image costs on this model. */
export function describePrice(model: ModelSpec): string {
	if (model.price.by === 'quality') {
		const { low, medium, high } = model.price.credits;
		return `${low} / ${medium} / ${high} credits per image (low / medium / high quality) plus ${model.price.perReference} per reference image`;
	}
	const credits = model.price.credits;
	const parts = model.resolutions.map((resolution) => `${credits[resolution]} at ${resolution}`);
	return `${parts.join(', ')} credits per image`;
}
