/** Max File Size, the option of every operation that downloads, and the transport's own cap. */
import { maxFileBytes, maxFileSizeOption } from '../../nodes/ImagePack/actions/fileSize';
import { DEFAULT_MAX_FILE_BYTES } from '../../nodes/ImagePack/transport/limits';

describe('maxFileSizeOption', () => {
	it('defaults to the transport’s cap, and reads MB as bytes', () => {
		expect(maxFileBytes({})).toBe(DEFAULT_MAX_FILE_BYTES);
		expect(Number(maxFileSizeOption.default) * 1024 * 1024).toBe(DEFAULT_MAX_FILE_BYTES);
		expect(maxFileBytes({ maxFileSizeMb: 1.5 })).toBe(1.5 * 1024 * 1024);
		expect(() => maxFileBytes({ maxFileSizeMb: 0 })).toThrow(
			'Allowed values: numbers from 1 to 1024',
		);
	});
});
