# Thin wrapper over the scripts; the scripts are the source of truth.
.PHONY: build run test unit models
build:
	./scripts/build.sh
run:
	./scripts/run.sh
test:
	./scripts/test.sh
unit: build
	ctest --test-dir build -L unit --output-on-failure
models:
	./scripts/get-models.sh
