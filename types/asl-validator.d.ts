// asl-validator ships no type declarations; this is the part of its API the tests use.
declare module 'asl-validator' {
  interface ValidationResult {
    isValid: boolean;
    errors: unknown[];
  }
  export default function aslValidator(
    definition: unknown,
    options?: { checkPaths?: boolean; checkArn?: boolean },
  ): ValidationResult;
}
