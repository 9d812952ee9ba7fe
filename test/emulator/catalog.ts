/**
 * The server's own truth about models, prices, reference limits and image sizes, as the API states them.
 * Deliberately independent of the node package's code: the emulator must not agree with a client bug.
 */

export type ModelId =
	| 'nano-banana-2'
	| 'gpt-image-2'
	| 'gpt-image-2.5'
	| 'seedream-5-0-pro'
	| 'qwen-image-3.0-pro';
export type RequestedModel = ModelId | 'auto';
export type Ratio = '1:1' | '3:4' | '4:5' | '16:9' | '9:16';
export type Resolution = '1K' | '2K' | '4K';
export type Quality = 'low' | 'medium' | 'high';
export type PurposeId = 'free' | 'main_white' | 'detail' | 'buyer_show' | 'pure_white';

export const RATIOS: readonly Ratio[] = ['1:1', '3:4', '4:5', '16:9', '9:16'];
export const RESOLUTIONS: readonly Resolution[] = ['1K', '2K', '4K'];
export const QUALITIES: readonly Quality[] = ['low', 'medium', 'high'];
export const N_VALUES: readonly number[] = [1, 2, 4];
export const PURPOSES: readonly PurposeId[] = ['free', 'main_white', 'detail', 'buyer_show', 'pure_white'];
export const DEFAULT_RATIO: Ratio = '3:4';
export const DEFAULT_QUALITY: Quality = 'medium';
export const DEFAULT_PURPOSE: PurposeId = 'free';
export const MAX_PROMPT_LENGTH = 4000;

export interface ModelSpec {
	id: ModelId;
	status: 'Stable' | 'Testing';
	ratios: readonly Ratio[];
	resolutions: readonly Resolution[];
	defaultResolution: Resolution;
	/** Only GPT models use quality; the others ignore it. */
	usesQuality: boolean;
	referenceLimit: number;
	/** Credits per image, before the GPT per-reference surcharge. */
	price: (resolution: Resolution, quality: Quality) => number;
	/** Credits added per reference image, per generated image (GPT only). */
	perReferenceSurcharge: number;
}

const GPT_PRICE: Record<Quality, number> = { low: 5, medium: 15, high: 50 };
const NO_4_5: Ratio[] = ['1:1', '3:4', '16:9', '9:16'];

const gpt = (id: ModelId, status: ModelSpec['status']): ModelSpec => ({
	id,
	status,
	ratios: RATIOS,
	resolutions: RESOLUTIONS,
	defaultResolution: '1K',
	usesQuality: true,
	referenceLimit: 16,
	price: (_resolution, quality) => GPT_PRICE[quality],
	perReferenceSurcharge: 1,
});

export const MODELS: Record<ModelId, ModelSpec> = {
	'nano-banana-2': {
		id: 'nano-banana-2',
		status: 'Stable',
		ratios: RATIOS,
		resolutions: RESOLUTIONS,
		defaultResolution: '2K',
		usesQuality: false,
		referenceLimit: 14,
		price: (resolution) => ({ '1K': 12, '2K': 16, '4K': 23 })[resolution],
		perReferenceSurcharge: 0,
	},
	'gpt-image-2': gpt('gpt-image-2', 'Stable'),
	'gpt-image-2.5': gpt('gpt-image-2.5', 'Testing'),
	'seedream-5-0-pro': {
		id: 'seedream-5-0-pro',
		status: 'Testing',
		ratios: NO_4_5,
		resolutions: ['1K', '2K'],
		defaultResolution: '1K',
		usesQuality: false,
		referenceLimit: 10,
		price: (resolution) => (resolution === '1K' ? 6 : 12),
		perReferenceSurcharge: 0,
	},
	'qwen-image-3.0-pro': {
		id: 'qwen-image-3.0-pro',
		status: 'Testing',
		ratios: NO_4_5,
		resolutions: ['1K', '2K'],
		defaultResolution: '1K',
		usesQuality: false,
		referenceLimit: 3,
		price: (resolution) => (resolution === '1K' ? 6 : 11),
		perReferenceSurcharge: 0,
	},
};

export const MODEL_IDS = Object.keys(MODELS) as ModelId[];
export const REQUESTABLE_MODELS: readonly RequestedModel[] = ['auto', ...MODEL_IDS];
/** The largest reference limit of any model: beyond it even `auto` has nothing that fits. */
export const MAX_REFERENCE_LIMIT = Math.max(...MODEL_IDS.map((id) => MODELS[id].referenceLimit));

/** Credits for ONE image (quality omitted on a GPT model is billed as medium). */
export function pricePerImage(
	model: ModelId,
	resolution: Resolution,
	quality: Quality | undefined,
	referenceCount: number,
): number {
	const spec = MODELS[model];
	return (
		spec.price(resolution, quality ?? DEFAULT_QUALITY) + spec.perReferenceSurcharge * referenceCount
	);
}

/**
 * Cues that the prompt wants text rendered in the image (brand name, slogan, price, quoted text...).
 * Heuristic by nature; documented in the README so scenarios can rely on it.
 */
const TEXT_CUES: RegExp[] = [
	/["“”「」『』《》]/, // quoted text
	/\b(text|texts|slogan|tagline|brand ?name|logo text|price|prices|caption|headline|title|lettering|typography|wording|words?|label that says|says|written|font)\b/i,
	/[$¥￥€£]\s?\d/, // a price
	/\d+(\.\d+)?\s?(元|块|rmb|usd|yuan)/i,
	/文字|文案|标语|口号|品牌名|品牌名称|价格|售价|字样|写着|标题|字体|促销语|广告语/,
];

export function promptWantsText(prompt: string | undefined): boolean {
	return !!prompt && TEXT_CUES.some((cue) => cue.test(prompt));
}

/**
 * The API's rules for model `auto`: nano-banana-2 by default; gpt-image-2 when the prompt asks for
 * text in the image; when the reference count exceeds the preferred model's limit, the first model
 * (in the order gpt-image-2, nano-banana-2, seedream, qwen — Stable before Testing) that fits the
 * references, the ratio and the resolution. Returns undefined when nothing fits.
 */
export function chooseAutoModel(
	prompt: string | undefined,
	referenceCount: number,
	ratio: Ratio,
	resolution: Resolution | undefined,
): ModelId | undefined {
	const preferred: ModelId = promptWantsText(prompt) ? 'gpt-image-2' : 'nano-banana-2';
	const order: ModelId[] = [
		preferred,
		...(['gpt-image-2', 'nano-banana-2', 'seedream-5-0-pro', 'qwen-image-3.0-pro'] as ModelId[]).filter(
			(id) => id !== preferred,
		),
	];
	return order.find((id) => {
		const spec = MODELS[id];
		return (
			referenceCount <= spec.referenceLimit &&
			spec.ratios.includes(ratio) &&
			(resolution === undefined || spec.resolutions.includes(resolution))
		);
	});
}

/** Long side in pixels per resolution: 1K = 1024, 2K = 2048, 4K = 4096. */
export const LONG_SIDE: Record<Resolution, number> = { '1K': 1024, '2K': 2048, '4K': 4096 };

/**
 * Pixel size for ratio × resolution. The long side is exact; the short side is long × ratio rounded
 * to a multiple of 4 (only 4:5 needs rounding: 820×1024, 1640×2048, 3276×4096).
 */
export function dimensions(ratio: Ratio, resolution: Resolution): { width: number; height: number } {
	const [w, h] = ratio.split(':').map(Number);
	const long = LONG_SIDE[resolution];
	const short = Math.round((long * Math.min(w, h)) / Math.max(w, h) / 4) * 4;
	return w >= h ? { width: long, height: short } : { width: short, height: long };
}

/** True when width/height is the requested ratio within 1 % (4:5 needs rounding). */
export function matchesRatio(width: number, height: number, ratio: Ratio): boolean {
	const [w, h] = ratio.split(':').map(Number);
	return Math.abs(width / height / (w / h) - 1) < 0.01;
}
