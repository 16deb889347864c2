"""Real `DescribeInstanceTypes` entries (trimmed to the fields karpy reads) for worked examples."""

from __future__ import annotations

from typing import Any

M5_LARGE: dict[str, Any] = {
    "InstanceType": "m5.large",
    "Hypervisor": "nitro",
    "VCpuInfo": {"DefaultVCpus": 2},
    "MemoryInfo": {"SizeInMiB": 8192},
    "ProcessorInfo": {
        "Manufacturer": "Intel",
        "SupportedArchitectures": ["x86_64"],
        "SustainedClockSpeedInGhz": 3.1,
    },
    "EbsInfo": {
        "EbsOptimizedSupport": "default",
        "EbsOptimizedInfo": {"BaselineBandwidthInMbps": 650, "MaximumBandwidthInMbps": 4750},
    },
    "NetworkInfo": {
        "DefaultNetworkCardIndex": 0,
        "EncryptionInTransitSupported": False,
        "Ipv4AddressesPerInterface": 10,
        "MaximumNetworkInterfaces": 3,
        "NetworkCards": [
            {"NetworkCardIndex": 0, "MaximumNetworkInterfaces": 3, "BaselineBandwidthInGbps": 0.75}
        ],
    },
    "SupportedUsageClasses": ["on-demand", "spot"],
}

C6G_XLARGE: dict[str, Any] = {
    "InstanceType": "c6g.xlarge",
    "Hypervisor": "nitro",
    "VCpuInfo": {"DefaultVCpus": 4},
    "MemoryInfo": {"SizeInMiB": 8192},
    "ProcessorInfo": {
        "Manufacturer": "AWS",
        "SupportedArchitectures": ["arm64"],
        "SustainedClockSpeedInGhz": 2.5,
    },
    "EbsInfo": {
        "EbsOptimizedSupport": "default",
        "EbsOptimizedInfo": {"MaximumBandwidthInMbps": 4750},
    },
    "NetworkInfo": {
        "DefaultNetworkCardIndex": 0,
        "EncryptionInTransitSupported": False,
        "Ipv4AddressesPerInterface": 15,
        "MaximumNetworkInterfaces": 4,
        "NetworkCards": [
            {"NetworkCardIndex": 0, "MaximumNetworkInterfaces": 4, "BaselineBandwidthInGbps": 1.25}
        ],
    },
    "SupportedUsageClasses": ["on-demand", "spot"],
}

G4DN_XLARGE: dict[str, Any] = {
    "InstanceType": "g4dn.xlarge",
    "Hypervisor": "nitro",
    "VCpuInfo": {"DefaultVCpus": 4},
    "MemoryInfo": {"SizeInMiB": 16384},
    "ProcessorInfo": {
        "Manufacturer": "Intel",
        "SupportedArchitectures": ["x86_64"],
        "SustainedClockSpeedInGhz": 2.5,
    },
    "GpuInfo": {
        "Gpus": [
            {
                "Count": 1,
                "Manufacturer": "NVIDIA",
                "MemoryInfo": {"SizeInMiB": 16384},
                "Name": "T4",
            }
        ],
        "TotalGpuMemoryInMiB": 16384,
    },
    "InstanceStorageInfo": {"NvmeSupport": "required", "TotalSizeInGB": 125},
    "EbsInfo": {
        "EbsOptimizedSupport": "default",
        "EbsOptimizedInfo": {"MaximumBandwidthInMbps": 3500},
    },
    "NetworkInfo": {
        "DefaultNetworkCardIndex": 0,
        "EncryptionInTransitSupported": True,
        "Ipv4AddressesPerInterface": 10,
        "MaximumNetworkInterfaces": 3,
        "NetworkCards": [
            {"NetworkCardIndex": 0, "MaximumNetworkInterfaces": 3, "BaselineBandwidthInGbps": 5.0}
        ],
    },
    "SupportedUsageClasses": ["on-demand", "spot"],
}

# p4d.24xlarge: four network cards of 15 ENIs each; only the default card counts for pods.
P4D_24XLARGE: dict[str, Any] = {
    "InstanceType": "p4d.24xlarge",
    "VCpuInfo": {"DefaultVCpus": 96},
    "MemoryInfo": {"SizeInMiB": 1179648},
    "ProcessorInfo": {"Manufacturer": "Intel", "SupportedArchitectures": ["x86_64"]},
    "GpuInfo": {
        "Gpus": [
            {
                "Count": 8,
                "Manufacturer": "NVIDIA",
                "MemoryInfo": {"SizeInMiB": 40960},
                "Name": "A100",
            }
        ]
    },
    "NetworkInfo": {
        "DefaultNetworkCardIndex": 0,
        "Ipv4AddressesPerInterface": 50,
        "MaximumNetworkInterfaces": 60,
        "EfaInfo": {"MaximumEfaInterfaces": 4},
        "NetworkCards": [
            {
                "NetworkCardIndex": i,
                "MaximumNetworkInterfaces": 15,
                "BaselineBandwidthInGbps": 100.0,
            }
            for i in range(4)
        ],
    },
    "SupportedUsageClasses": ["capacity-block", "on-demand", "spot"],
}

INF2_XLARGE: dict[str, Any] = {
    "InstanceType": "inf2.xlarge",
    "VCpuInfo": {"DefaultVCpus": 4},
    "MemoryInfo": {"SizeInMiB": 16384},
    "ProcessorInfo": {"Manufacturer": "AMD", "SupportedArchitectures": ["x86_64"]},
    "NeuronInfo": {
        "NeuronDevices": [{"Count": 1, "Name": "Inferentia2", "CoreInfo": {"Count": 2}}]
    },
    "NetworkInfo": {"Ipv4AddressesPerInterface": 15, "MaximumNetworkInterfaces": 4},
    "SupportedUsageClasses": ["on-demand", "spot"],
}

# a1.large: first-generation Graviton, which AL2023 has no image for.
A1_LARGE: dict[str, Any] = {
    "InstanceType": "a1.large",
    "Hypervisor": "nitro",
    "VCpuInfo": {"DefaultVCpus": 2},
    "MemoryInfo": {"SizeInMiB": 4096},
    "ProcessorInfo": {"Manufacturer": "AWS", "SupportedArchitectures": ["arm64"]},
    "NetworkInfo": {"Ipv4AddressesPerInterface": 10, "MaximumNetworkInterfaces": 3},
    "SupportedUsageClasses": ["on-demand", "spot"],
}

TRN1_2XLARGE: dict[str, Any] = {
    "InstanceType": "trn1.2xlarge",
    "VCpuInfo": {"DefaultVCpus": 8},
    "MemoryInfo": {"SizeInMiB": 32768},
    "ProcessorInfo": {"Manufacturer": "Intel", "SupportedArchitectures": ["x86_64"]},
    "NeuronInfo": {"NeuronDevices": [{"Count": 1, "Name": "Trainium", "CoreInfo": {"Count": 2}}]},
    "NetworkInfo": {"Ipv4AddressesPerInterface": 15, "MaximumNetworkInterfaces": 4},
    "SupportedUsageClasses": ["on-demand", "spot"],
}
