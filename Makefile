# Data4Help — the two commands of the README, and a few helpers.
#   make run    install missing system packages, build, serve on http://localhost:8080
#   make test   install what the tests need, build, run the contract test and the test suite

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

SYSTEM_PACKAGES := postgresql libargon2-dev zlib1g-dev pkg-config curl chromium nginx libjs-leaflet
PYTHON ?= python3
VENV := .build/venv
PYTHON_TOOLS := schemathesis==4.32.5 openapi-spec-validator==0.9.0
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: help run test bench drills build deps device-fixtures python-tools deploy-check contract-test unit-test clean-data fuzz fuzz-build hardening-check format format-check kit kit-check embedded-list

help:
	@echo "make run    build and serve Data4Help on http://localhost:8080 (embedded PostgreSQL under .data/)"
	@echo "make test   run the test suite and the OpenAPI contract test against real PostgreSQL"
	@echo "make bench  build for release and print the benchmarks' figures"
	@echo "make drills failure drills and the load run: two instances behind nginx (figures printed)"
	@echo "make fuzz   libFuzzer over every decoder of outside bytes (FUZZ_SECONDS per target)"

## Debian packages the build and the embedded database need; installed only when missing.
define install-missing
	@missing=""; \
	for package in $(1); do \
	  dpkg-query -W -f='$${Status}' "$$package" 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef
deps:
	$(call install-missing,$(SYSTEM_PACKAGES))

## Device files written by encoders we did not write, for the DeviceFiles and import tests
## (.build/device-fixtures): FIT by fit-tool (PyPI), FIT read back and GPX turned into TCX and
## FIT by GPSBabel (Debian).
TEST_PACKAGES := gpsbabel
FIXTURE_TOOLS := fit-tool==0.9.16
DEVICE_FIXTURES := .build/device-fixtures
device-fixtures: deps python-tools
	$(call install-missing,$(TEST_PACKAGES))
	@[ -x $(VENV)/bin/fit-tool ] || $(VENV)/bin/pip install -q --disable-pip-version-check $(FIXTURE_TOOLS)
	@rm -rf $(DEVICE_FIXTURES) && mkdir -p $(DEVICE_FIXTURES)
	$(VENV)/bin/python Tests/Fixtures/DeviceFiles/make-fixtures.py $(DEVICE_FIXTURES)
	gpsbabel -i garmin_fit -f $(DEVICE_FIXTURES)/fit-tool-activity.fit -o gpx -F $(DEVICE_FIXTURES)/fit-tool-activity.gpsbabel.gpx
	gpsbabel -i garmin_fit -f $(DEVICE_FIXTURES)/fit-tool-activity.fit -o gtrnctr,course=0,sport=Running -F $(DEVICE_FIXTURES)/gpsbabel-activity.tcx
	gpsbabel -i gpx -f Tests/Fixtures/GPX/garmin-connect-run.gpx -o gtrnctr,course=0,sport=Running -F $(DEVICE_FIXTURES)/gpsbabel-run.tcx
	gpsbabel -i gpx -f Tests/Fixtures/GPX/garmin-connect-run.gpx -o gtrnctr,course=1 -F $(DEVICE_FIXTURES)/gpsbabel-course.tcx
	gpsbabel -i gpx -f Tests/Fixtures/GPX/garmin-connect-run.gpx -o garmin_fit -F $(DEVICE_FIXTURES)/gpsbabel-course.fit

## SwiftPM lists the files the EmbedFiles plugin compiles in (migrations, contract, templates)
## only when it loads the package: a file added since the last build is embedded once
## Package.swift is newer than the build's record of that list.
EMBEDDED_LIST = .build/embedded-files.list
embedded-list:
	@mkdir -p .build; ls migrations Sources/HTTPAPI/Pages/Templates > $(EMBEDDED_LIST).new
	@cmp -s $(EMBEDDED_LIST).new $(EMBEDDED_LIST) || touch Package.swift
	@mv $(EMBEDDED_LIST).new $(EMBEDDED_LIST)

build: deps embedded-list
	swift build --product data4help

run: build
	@echo "Data4Help: http://localhost:8080 — organisations' portal /portal, individuals' pages /me, API /api (openapi.yaml)."
	@echo "Demo accounts: run '.build/debug/data4help seed --demo' in another terminal."
	.build/debug/data4help serve

## schemathesis and openapi-spec-validator from PyPI, in a virtualenv under .build/.
python-tools:
	@[ -x $(VENV)/bin/schemathesis ] || { $(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install -q --disable-pip-version-check $(PYTHON_TOOLS); }

## deploy/ checked against the Kubernetes schemas and the Compose specification (no Docker or
## Kubernetes here): kubernetes-validate, and docker-compose 1.29.2 for its bundled schema only.
DEPLOY_TOOLS := kubernetes-validate==1.37.0
deploy-check: python-tools
	@[ -x $(VENV)/bin/kubernetes-validate ] || { $(VENV)/bin/pip install -q --disable-pip-version-check $(DEPLOY_TOOLS) \
	  && $(VENV)/bin/pip install -q --disable-pip-version-check --no-deps docker-compose==1.29.2; }
	$(VENV)/bin/python Tests/Deploy/check-deploy.py .

contract-test: build python-tools
	Tests/Contract/run-schemathesis.sh .build/debug/data4help $(VENV)/bin

unit-test: deps device-fixtures embedded-list
	swift build --build-tests
	swift test --skip-build

## No trapping integer conversion that nobody reviewed (Tests/Hardening/reviewed-conversions.txt).
hardening-check:
	$(PYTHON) Tests/Hardening/check-conversions.py

## swift-format (the toolchain's, `.swift-format`: Hummingbird's line length of 150): `make format`
## rewrites, `format-check` (part of `make test`) fails on any file that is not formatted.
FORMATTED = Sources Tests Package.swift
format:
	swift format format --in-place --recursive --parallel $(FORMATTED)
format-check:
	swift format lint --strict --recursive --parallel $(FORMATTED)

## libFuzzer over every decoder of outside bytes (DecoderFuzzing): a build of its own with
## -sanitize=fuzzer, then each target for FUZZ_SECONDS; a crash fails and keeps its input in
## Tests/Fuzz/regressions/, which the test suite replays.
FUZZ_SECONDS ?= 20
fuzz-build: deps
	swift build --build-path .build/fuzz --product data4help-fuzz -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING -Xswiftc -parse-as-library
fuzz: fuzz-build
	Tests/Fuzz/run-fuzzers.sh .build/fuzz/debug/data4help-fuzz $(FUZZ_SECONDS)

## Data4HelpKit's client (Sources/Data4HelpKit/Generated) is generated from the contract by
## swift-openapi-generator, built in a package of its own (Tools/KitGenerator: about a minute) so
## that the server's build never builds it. `make kit` regenerates the committed code; `kit-check`
## (part of `make test`) generates into a scratch directory and fails when the committed code
## differs — a contract change that was not regenerated, or a hand edit.
KIT_GENERATOR = Tools/KitGenerator/.build/debug/swift-openapi-generator
KIT_GENERATE = $(KIT_GENERATOR) generate --config openapi/kit-generator-config.yaml openapi/data4help.yaml
$(KIT_GENERATOR): Tools/KitGenerator/Package.swift
	swift build --package-path Tools/KitGenerator --product swift-openapi-generator
kit: $(KIT_GENERATOR)
	rm -rf Sources/Data4HelpKit/Generated
	$(KIT_GENERATE) --output-directory Sources/Data4HelpKit/Generated > .build/kit-generate.log 2>&1 || (cat .build/kit-generate.log; exit 1)
kit-check: $(KIT_GENERATOR)
	rm -rf .build/kit-check
	$(KIT_GENERATE) --output-directory .build/kit-check > .build/kit-generate.log 2>&1 || (cat .build/kit-generate.log; exit 1)
	@diff -r Sources/Data4HelpKit/Generated .build/kit-check > .build/kit-check.diff || { \
		head -40 .build/kit-check.diff; \
		echo "Sources/Data4HelpKit/Generated does not match openapi/data4help.yaml: run 'make kit' and commit the result."; exit 1; }
	@echo "Data4HelpKit's generated client matches the contract."

## The contract test and the fuzzers first, so that the test suite's own summary closes the output.
test: deploy-check hardening-check format-check kit-check contract-test fuzz unit-test

## Benchmarks print figures; they assert nothing. Release build, throwaway database.
## Every benchmark, one after another, then one table of their figures, which is also written
## into the README's performance section.
## wrk (Debian) is the load generator of `bench reads`.
BENCH_PACKAGES := wrk
bench: deps embedded-list
	$(call install-missing,$(BENCH_PACKAGES))
	swift build -c release --product data4help
	.build/release/data4help bench all --readme README.md

## Failure drills print figures and check that nothing acknowledged is lost; minutes long, so
## not part of `make test`. The test binary is run directly so their figures stream as they come.
## The servers under drill are the release build (DATA4HELP_EXECUTABLE), as in production. The
## drills and the load run go one after the other, never side by side on the same cores.
DRILL = DATA4HELP_DRILLS=1 DATA4HELP_EXECUTABLE=$(CURDIR)/.build/release/data4help \
	.build/debug/data4helpPackageTests.xctest --testing-library swift-testing
drills: deps embedded-list
	swift build --build-tests
	swift build -c release --product data4help
	$(DRILL) --filter FailureDrills
	$(DRILL) --filter LoadRun

clean-data:
	rm -rf .data
