declare module "*.md?raw" {
  const text: string;
  export default text;
}

declare module "*.test?raw" {
  const text: string;
  export default text;
}
