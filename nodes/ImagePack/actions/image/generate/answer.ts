/** Reading a paid generation's answer, whatever its shape. Pure. */
import type { IDataObject } from 'n8n-workflow';

export interface GeneratedImage {
	id: string;
	filename: string;
	url: string;
	width: number;
	height: number;
}

export interface GenerateResponse extends IDataObject {
	turn_id: string;
	session_id: string;
	warnings: IDataObject[];
	images: GeneratedImage[];
}

/** What a 2xx generate answer holds that the node can use, and what was wrong with the rest. */
export interface ReadAnswer {
	images: GeneratedImage[];
	warnings: IDataObject[];
	/** Plain-English notes about an answer that does not have the documented shape. */
	problems: string[];
}

function isObject(value: unknown): value is IDataObject {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads the images and warnings of a paid answer: entries that are no image or no warning are
 * skipped with a note instead of failing the item, and no more images are used than were requested
 * (a 10,000-entry list for n = 1 does not start 10,000 downloads).
 */
export function readAnswer(body: IDataObject, requested: number): ReadAnswer {
	const problems: string[] = [];
	const images: GeneratedImage[] = [];
	if (!Array.isArray(body.images)) {
		problems.push('the answer has no images list');
	} else {
		body.images.forEach((image: unknown, index) => {
			if (isObject(image) && typeof image.url === 'string' && image.url) {
				images.push(image as unknown as GeneratedImage);
			} else if (problems.length < 10) {
				problems.push(
					`images[${index}] is not an image with a url (${JSON.stringify(image)?.slice(0, 60)})`,
				);
			}
		});
		if (images.length > requested) {
			problems.push(
				`the answer lists ${images.length} images for ${requested} requested; only the first ${requested} are used`,
			);
			images.length = requested;
		}
	}
	const warnings: IDataObject[] = [];
	if (body.warnings !== undefined && !Array.isArray(body.warnings)) {
		problems.push('the warnings field is not a list');
	} else {
		for (const warning of (body.warnings as unknown[] | undefined) ?? []) {
			if (isObject(warning)) warnings.push(warning);
			else problems.push(`a warning is not an object (${JSON.stringify(warning)?.slice(0, 60)})`);
		}
	}
	return { images, warnings, problems };
}
