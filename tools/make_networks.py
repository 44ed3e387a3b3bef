"""Generate the real-network suite under ``tests/networks/``: small, randomly initialised versions of the network
families users run (CNNs, vision and text transformers, an encoder-decoder, an audio net, a UNet stage), converted
by ``openvino.convert_model`` from PyTorch and written by ``openvino.save_model`` exactly as a user gets them.

For every network in ``NETWORKS`` and both variants (``static`` input shapes, and ``dynamic`` ones: dynamic batch
plus dynamic sequence length / spatial dims where the family allows) the script writes:

* ``NAME_<variant>.xml`` + ``.bin`` (``save_model``'s default fp16 weight compression, except for the networks
  marked ``f32w`` which are saved with ``compress_to_fp16=False``);
* ``NAME_<variant>.inputs.npz``: one array per model input, keyed by the input's ``get_any_name()``, in input
  order (the dynamic variant's data has a different shape from the static one's);
* ``NAME_<variant>.expected.npz``: one array per output, keyed by ``get_any_name()``, in output order, as
  OpenVINO's CPU plugin computes it from the re-read file with ``INFERENCE_PRECISION_HINT=f32`` and one thread;
* ``README.md``: per network, the layer types OpenVINO wrote (``Type-opsetN`` with counts) and file sizes.

Weights are random (fixed seeds derived from the network name); nothing is downloaded.  Friendly names are the
ones OpenVINO generates.  Needs the ``export`` extra (torch, torchvision, timm, transformers, openvino); run from
the repository root::

    python tools/make_networks.py [--out tests/networks] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import openvino as ov
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_exports import LAYER, infer  # noqa: E402 - one OpenVINO run and layer census for both scripts

COMMAND = "python tools/make_networks.py --out tests/networks"


# ----------------------------------------------------------------------------------------------------
# specs


@dataclass(frozen=True)
class Input:
    """One model input (named after the module's forward() argument).  ``static`` is the data shape of the static
    variant, ``dynamic`` the (different) data shape stored for the dynamic variant, ``dims`` the dims that are
    dynamic in the dynamic variant.  ``kind``: "float" (normal data), "ids" (token ids below ``high``),
    "mask" (an attention mask of ones with trailing padding in all but the first row), "audio" (a waveform)."""

    name: str
    static: tuple[int, ...]
    dynamic: tuple[int, ...]
    dims: tuple[int, ...]
    kind: str = "float"
    high: int = 0

    def partial_shape(self, dynamic: bool) -> ov.PartialShape:
        if not dynamic:
            return ov.PartialShape(list(self.static))
        return ov.PartialShape([-1 if i in self.dims else d for i, d in enumerate(self.static)])


@dataclass(frozen=True)
class Network:
    name: str
    build: Callable[[], nn.Module]
    inputs: tuple[Input, ...]
    what: str
    compress: bool = True  # save_model's default fp16 weight compression
    notes: list[str] = field(default_factory=list, compare=False, hash=False)


def _seed(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def _randomize_norms(module: nn.Module, seed: int) -> nn.Module:
    """Default inits put ones/zeros in norm layers (and 1e-6 in ConvNeXt's layer scale), which converters and
    kernels may treat as special: give them non-trivial values, and give BatchNorm real running statistics so the
    folded BatchNorm is not an identity."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, mod in sorted(module.named_modules(), key=lambda nm: nm[0]):
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                mod.running_mean.copy_(0.1 * torch.randn(mod.running_mean.shape, generator=gen))
                mod.running_var.copy_(0.5 + torch.rand(mod.running_var.shape, generator=gen))
        for name, p in sorted(module.named_parameters()):
            leaf = name.rsplit(".", 1)[-1]
            if "layer_scale" in name or leaf in ("gamma", "ls1", "ls2"):
                p.copy_(0.5 + 0.1 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 1 and leaf == "weight" and bool((p == 1).all()):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 1 and leaf == "bias" and bool((p == 0).all()):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    return module.eval()


# ----------------------------------------------------------------------------------------------------
# CNNs (torchvision / timm)


def resnet18() -> nn.Module:
    from timm.models.resnet import BasicBlock, ResNet

    # ResNet-18's layout (BasicBlocks, [2, 2, 2, 2], 7x7 stem + max-pool) at a quarter of the width
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes=10, stem_width=8, channels=(8, 16, 32, 64))


def mobilenet_v3_small() -> nn.Module:
    from torchvision.models import mobilenet_v3_small as mnv3

    return mnv3(weights=None, width_mult=0.5, num_classes=10)


def convnext() -> nn.Module:
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    setting = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, 128, 2),
               CNBlockConfig(128, None, 1)]
    return ConvNeXt(setting, num_classes=10)


def vit() -> nn.Module:
    from timm.models.vision_transformer import VisionTransformer

    return VisionTransformer(img_size=64, patch_size=8, embed_dim=64, depth=2, num_heads=4, mlp_ratio=2.0,
                             num_classes=10)


def swin() -> nn.Module:
    from torchvision.models.swin_transformer import SwinTransformer

    return SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                           num_classes=10)


def efficientnet_b0() -> nn.Module:
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf

    setting, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.34)
    return EfficientNet(setting, dropout=0.2, last_channel=last, num_classes=10)


def regnety_400mf() -> nn.Module:
    from torchvision.models.regnet import BlockParams, RegNet

    # RegNetY-400MF's generator (w_0=48, w_a=27.89, w_m=2.09, group width 8, SE 0.25) cut to 4 blocks
    params = BlockParams.from_init_params(depth=4, w_0=16, w_a=8.0, w_m=2.09, group_width=8, se_ratio=0.25)
    return RegNet(params, num_classes=10, stem_width=16)


def mobilevitv2() -> nn.Module:
    from timm.models.byobnet import ByobNet
    from timm.models.mobilevit import _mobilevitv2_cfg

    return ByobNet(_mobilevitv2_cfg(multiplier=0.25), num_classes=10)  # mobilevitv2_050 is multiplier 0.5


def resnetv2_bit() -> nn.Module:
    from timm.models.resnetv2 import ResNetV2

    # BiT-style ResNetV2: pre-activation bottlenecks, GroupNorm + weight-standardised convs (StdConv2d)
    return ResNetV2(layers=[1, 1, 1, 1], channels=(32, 64, 128, 256), num_classes=10, stem_type="fixed",
                    conv_layer=_std_conv(), norm_layer=_group_norm_act(), width_factor=1)


def _std_conv():
    from functools import partial

    from timm.layers import StdConv2d

    return partial(StdConv2d, eps=1e-8)


def _group_norm_act():
    from functools import partial

    from timm.layers import GroupNormAct

    return partial(GroupNormAct, num_groups=8)


class SSDBackbone(nn.Module):
    """SSD300-VGG16's feature extractor, as torchvision's SSDFeatureExtractorVGG builds it (VGG16 convs up to
    conv4_3 with ceil-mode pool3, conv4_3 L2-normalised and scaled by a learned per-channel weight, pool5 3x3/1,
    atrous fc6, fc7, and the four extra blocks of SSD300), at 1/``div`` of its width: torchvision's class hard-codes
    the 512/1024-channel fc6/fc7/extras (~7M parameters), so the same structure is written out here.  Returns the
    six feature maps."""

    def __init__(self, div: int = 8):
        super().__init__()
        from torchvision.models.vgg import cfgs, make_layers

        def c(n: int) -> int:
            return n // div

        vgg = make_layers([v if v == "M" else c(v) for v in cfgs["D"]], batch_norm=False)
        pools = [i for i, layer in enumerate(vgg) if isinstance(layer, nn.MaxPool2d)]
        vgg[pools[2]].ceil_mode = True
        self.features = nn.Sequential(*vgg[:pools[3]])  # until conv4_3
        self.scale_weight = nn.Parameter(torch.ones(c(512)) * 20)
        fc = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1),
                           nn.Conv2d(c(512), c(1024), kernel_size=3, padding=6, dilation=6), nn.ReLU(),
                           nn.Conv2d(c(1024), c(1024), kernel_size=1), nn.ReLU())

        def extra(cin: int, mid: int, cout: int, **kw) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(c(cin), c(mid), 1), nn.ReLU(), nn.Conv2d(c(mid), c(cout), 3, **kw),
                                 nn.ReLU())

        self.extra = nn.ModuleList([
            nn.Sequential(*vgg[pools[3]:-1], fc),  # pool4, conv5_x (without pool5), fc6, fc7
            extra(1024, 256, 512, padding=1, stride=2),
            extra(512, 128, 256, padding=1, stride=2),
            extra(256, 128, 256),
            extra(256, 128, 256),
        ])

    def forward(self, x):
        x = self.features(x)
        out = [self.scale_weight.view(1, -1, 1, 1) * F.normalize(x)]
        for block in self.extra:
            x = block(x)
            out.append(x)
        return tuple(out)


class AlexNetSmall(nn.Module):
    """torchvision's AlexNet layout at 1/``div`` of its width, the classifier's hidden layers at 1/(4 ``div``) (its
    class hard-codes 64-256 channels and a 9216 x 4096 classifier, 61M parameters): 11x11/4 stem, three 3x3/2
    max-pools, ``AdaptiveAvgPool2d((6, 6))`` -- which OpenVINO writes as AdaptiveAvgPool-8 and which, on inputs
    smaller than 224x224, repeats features -- then the classifier (Dropout is off in eval).  A second output pools
    the same features with fastai's AdaptiveConcatPool2d at 2x2 (``AdaptiveMaxPool2d`` and ``AdaptiveAvgPool2d``
    concatenated: AdaptiveMaxPool-8 with i32 indices)."""

    def __init__(self, div: int = 8, num_classes: int = 10):
        super().__init__()

        def c(n: int) -> int:
            return n // div

        self.features = nn.Sequential(
            nn.Conv2d(3, c(64), kernel_size=11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(c(64), c(192), kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(c(192), c(384), kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(c(384), c(256), kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(c(256), c(256), kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=0.5), nn.Linear(c(256) * 6 * 6, c(1024)), nn.ReLU(inplace=True),
            nn.Dropout(p=0.5), nn.Linear(c(1024), c(1024)), nn.ReLU(inplace=True),
            nn.Linear(c(1024), num_classes),
        )
        self.concat_max = nn.AdaptiveMaxPool2d((2, 2))
        self.concat_avg = nn.AdaptiveAvgPool2d((2, 2))

    def forward(self, x):
        f = self.features(x)
        logits = self.classifier(torch.flatten(self.avgpool(f), 1))
        return logits, torch.cat([self.concat_max(f), self.concat_avg(f)], 1)


class NMSHead(nn.Module):
    """A detector's last step as torchvision writes it: ``torchvision.ops.batched_nms`` over boxes, scores and class
    ids decoded from one [N, 6] tensor.  batched_nms's ``if boxes.numel() == 0`` is scripted code, so OpenVINO's
    converter writes it as an If-8 with two sub-graphs (as in SSD, SSDLite, RetinaNet and Faster R-CNN); the
    NonMaxSuppression-9 sits in the else branch.  Returns the kept boxes, scores and class ids."""

    def __init__(self):
        super().__init__()
        from torchvision.ops import batched_nms  # imported here: its first import while tracing fails

        self.batched_nms = batched_nms

    def forward(self, x):
        boxes = torch.cat([x[:, :2] * 0.5, x[:, :2] * 0.5 + 2 + x[:, 2:4].exp() * 0.5], 1)  # overlapping
        scores = x[:, 4].sigmoid()
        classes = (x[:, 5] > 0).long()
        keep = self.batched_nms(boxes, scores, classes, 0.5)
        return boxes[keep], scores[keep], classes[keep]


# ----------------------------------------------------------------------------------------------------
# transformers models (tiny configs, random weights, no caches, plain tensor outputs)


class HiddenState(nn.Module):
    """Calls a transformers model with use_cache/return_dict off and returns the last hidden state (or logits)."""

    def __init__(self, model: nn.Module, key: int = 0):
        super().__init__()
        self.model = model
        self.key = key

    def _out(self, out):
        return out[self.key]


class TextEncoder(HiddenState):
    def forward(self, input_ids, attention_mask):
        return self._out(self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=False))


class CausalLM(HiddenState):
    def forward(self, input_ids, attention_mask):
        return self._out(self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                                    return_dict=False))


class Seq2Seq(HiddenState):
    def forward(self, input_ids, attention_mask, decoder_input_ids):
        return self._out(self.model(input_ids=input_ids, attention_mask=attention_mask,
                                    decoder_input_ids=decoder_input_ids, use_cache=False, return_dict=False))


class Audio(HiddenState):
    def forward(self, input_values):
        return self._out(self.model(input_values=input_values, return_dict=False))


VOCAB = 128


def bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, hidden_act="gelu")
    return TextEncoder(BertModel(cfg, add_pooling_layer=False))


def distilbert() -> nn.Module:
    from transformers import DistilBertConfig, DistilBertModel

    cfg = DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                           max_position_embeddings=64, attn_implementation="eager")
    return TextEncoder(DistilBertModel(cfg))


def llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, use_cache=False)
    return CausalLM(LlamaModel(cfg))


def gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64, use_cache=False,
                     attn_implementation="eager")
    return CausalLM(GPT2LMHeadModel(cfg))  # logits


def t5() -> nn.Module:
    from transformers import T5Config, T5Model

    cfg = T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                   relative_attention_num_buckets=8, relative_attention_max_distance=16, use_cache=False,
                   decoder_start_token_id=0)
    return Seq2Seq(T5Model(cfg))


def wav2vec2() -> nn.Module:
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    cfg = Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         conv_dim=(16, 16, 16), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2),
                         feat_extract_norm="group", num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2,
                         do_stable_layer_norm=False, apply_spec_augment=False, mask_time_prob=0.0)
    return Audio(Wav2Vec2Model(cfg))


# ----------------------------------------------------------------------------------------------------
# a UNet stage written here (diffusion-UNet style, no diffusers)


class ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, groups: int = 4):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2 = nn.GroupNorm(groups, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class SelfAttention(nn.Module):
    """Single-head spatial self-attention over the H*W positions (GroupNorm, 1x1 qkv, softmax(QK^T/sqrt(C)) V)."""

    def __init__(self, ch: int, groups: int = 4):
        super().__init__()
        self.norm = nn.GroupNorm(groups, ch)
        self.qkv = nn.Conv2d(ch, 3 * ch, 1)
        self.proj = nn.Conv2d(ch, ch, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).unbind(1)
        attn = torch.softmax(torch.einsum("bci,bcj->bij", q, k) * c ** -0.5, dim=-1)
        out = torch.einsum("bij,bcj->bci", attn, v).reshape(b, c, h, w)
        return x + self.proj(out)


class UNetStage(nn.Module):
    """Down (strided conv) -> res block -> self-attention -> nearest 2x up -> concat skip -> res block -> out."""

    def __init__(self, width: int = 16, groups: int = 4):
        super().__init__()
        w, g = width, groups
        self.inp = nn.Conv2d(3, w, 3, padding=1)
        self.res_in = ResBlock(w, w, g)
        self.down = nn.Conv2d(w, 2 * w, 3, stride=2, padding=1)
        self.res_mid = ResBlock(2 * w, 2 * w, g)
        self.attn = SelfAttention(2 * w, g)
        self.up_conv = nn.Conv2d(2 * w, w, 3, padding=1)
        self.res_out = ResBlock(2 * w, w, g)
        self.norm_out = nn.GroupNorm(g, w)
        self.out = nn.Conv2d(w, 3, 3, padding=1)

    def forward(self, x):
        skip = self.res_in(self.inp(x))
        h = self.attn(self.res_mid(self.down(skip)))
        h = self.up_conv(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        h = self.res_out(torch.cat([h, skip], dim=1))
        return self.out(F.silu(self.norm_out(h)))


# ----------------------------------------------------------------------------------------------------
# the list


def _image(static: int = 64, dynamic: int = 80, spatial: bool = True) -> tuple[Input, ...]:
    dims = (0, 2, 3) if spatial else (0,)
    dyn = dynamic if spatial else static
    return (Input("x", (1, 3, static, static), (2, 3, dyn, dyn), dims),)


def _text(static: int = 8, dynamic: int = 12) -> tuple[Input, ...]:
    return (Input("input_ids", (1, static), (2, dynamic), (0, 1), "ids", VOCAB),
            Input("attention_mask", (1, static), (2, dynamic), (0, 1), "mask"))


NETWORKS: tuple[Network, ...] = (
    Network("resnet18", resnet18, _image(), "timm ResNet-18 layout (BasicBlocks [2,2,2,2]) at 1/8 width; "
            "BatchNorm folded by OpenVINO", compress=False),
    Network("mobilenet_v3_small", mobilenet_v3_small, _image(),
            "torchvision MobileNetV3-Small, width 0.5: depthwise convs, squeeze-excite, hard-swish"),
    Network("convnext", convnext, _image(), "torchvision ConvNeXt with a reduced block_setting (16-128 channels, "
            "1-1-2-1 blocks): 7x7 depthwise conv, channels-last LayerNorm, layer scale"),
    Network("vit", vit, _image(64, 64, spatial=False), "timm VisionTransformer, 64x64 input, patch 8, embed 64, "
            "depth 2, 4 heads (fixed position embedding: only the batch is dynamic)"),
    Network("swin", swin, _image(64, 96), "torchvision SwinTransformer, embed 32, depths [2,2], window 4 "
            "(shifted windows: Roll, window partitioning, relative position bias)"),
    Network("bert", bert, _text(), "transformers BertModel, hidden 32, 2 layers, 2 heads (default attention "
            "implementation); input_ids + attention_mask -> last_hidden_state", compress=False),
    Network("llama", llama, _text(), "transformers LlamaModel, hidden 32, 2 layers, 4 heads / 2 KV heads (GQA), "
            "RMSNorm, rotary embeddings, causal mask; no cache -> last_hidden_state"),
    Network("gpt2", gpt2, _text(), "transformers GPT2LMHeadModel, n_embd 32, 2 layers, eager attention, causal "
            "mask; no cache -> logits"),
    Network("t5", t5, (*_text(), Input("decoder_input_ids", (1, 6), (2, 5), (0, 1), "ids", VOCAB)),
            "transformers T5Model, d_model 32, 2+2 layers, relative position buckets; encoder-decoder -> "
            "decoder last_hidden_state"),
    Network("wav2vec2", wav2vec2, (Input("input_values", (1, 400), (2, 560), (0, 1), "audio"),),
            "transformers Wav2Vec2Model, conv features 3x16 channels with GroupNorm (feat_extract_norm=group), "
            "grouped positional conv, 2 layers, hidden 32 -> last_hidden_state", compress=False),
    Network("unet_stage", UNetStage, _image(32, 48), "a UNet stage written in torch: GroupNorm, SiLU, "
            "Conv2d, strided down-conv, spatial self-attention, nearest 2x interpolate, concat skip"),
    Network("efficientnet_b0", efficientnet_b0, _image(), "torchvision EfficientNet-B0 at width 0.25, depth 0.34: "
            "MBConv with squeeze-excite, SiLU"),
    Network("regnety", regnety_400mf, _image(), "torchvision RegNet with RegNetY's group-width/SE design, "
            "4 blocks, 16-48 channels"),
    Network("distilbert", distilbert, _text(), "transformers DistilBertModel, dim 32, 2 layers, eager attention "
            "-> last_hidden_state"),
    Network("resnetv2_bit", resnetv2_bit, _image(), "timm ResNetV2 (BiT): pre-activation bottlenecks, "
            "GroupNorm + weight-standardised convs (StdConv2d), reduced to [1,1,1,1] blocks"),
    Network("mobilevitv2", mobilevitv2, _image(spatial=False),
            "timm MobileViTv2 at multiplier 0.25 (mobilevitv2_050 is 0.5; "
            "the unfold sizes are traced as constants, so only the batch is dynamic): inverted residuals + "
            "separable self-attention with GroupNorm(1) (LayerNorm over C,H,W)"),
    Network("alexnet", AlexNetSmall, _image(160, 128), "torchvision AlexNet's layout at 1/8 width (classifier "
            "1/32) on a 160x160 input: "
            "AdaptiveAvgPool2d((6, 6)) before the classifier (AdaptiveAvgPool-8), plus a fastai-style concat pool "
            "head (AdaptiveMaxPool-8 + AdaptiveAvgPool-8 at 2x2) as a second output"),
    Network("nms_head", NMSHead, (Input("x", (64, 6), (48, 6), (0,)),),
            "torchvision.ops.batched_nms on boxes, scores and classes decoded from [N, 6]: an If-8 (no boxes / "
            "NonMaxSuppression-9) as in torchvision's detectors; N boxes in, the kept ones out", compress=False),
    Network("ssd_vgg_backbone", SSDBackbone, (Input("x", (1, 3, 300, 300), (2, 3, 268, 268), (0, 2, 3)),),
            "SSD300-VGG16 feature extractor (torchvision's SSDFeatureExtractorVGG layout written out at 1/8 width: "
            "VGG16 convs, ceil-mode pooling, L2-normalised + scaled conv4_3, atrous fc6, extras) on a 300x300 "
            "input; returns the 6 feature maps"),
)


# ----------------------------------------------------------------------------------------------------
# full-size configurations (--full): the published architectures at their usual input sizes, random weights,
# static shapes only.  For benchmarks/networks.py --dir; too large to commit (17-440 MB each), so written to a
# cache directory.


def resnet50_full() -> nn.Module:
    from torchvision.models import resnet50

    return resnet50(weights=None)


def convnext_tiny_full() -> nn.Module:
    from torchvision.models import convnext_tiny

    return convnext_tiny(weights=None)


def vit_b16_full() -> nn.Module:
    from torchvision.models import vit_b_16

    model = vit_b_16(weights=None)
    nn.init.normal_(model.heads.head.weight, std=0.02)  # torchvision starts the head at zero: all-zero logits
    return model


def swin_t_full() -> nn.Module:
    from torchvision.models import swin_t

    return swin_t(weights=None)


def bert_base_full() -> nn.Module:
    from transformers import BertConfig, BertModel

    return TextEncoder(BertModel(BertConfig(), add_pooling_layer=False))  # bert-base-uncased's configuration


def gpt2_full() -> nn.Module:
    from transformers import GPT2Config, GPT2Model

    return CausalLM(GPT2Model(GPT2Config(use_cache=False, attn_implementation="eager")))  # GPT-2 small


def llama_full() -> nn.Module:
    from transformers import LlamaConfig, LlamaModel

    # SmolLM-135M's configuration: 30 layers, hidden 576, 9 heads / 3 KV heads, RMSNorm, rotary embeddings
    cfg = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                      num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
                      tie_word_embeddings=True, use_cache=False)
    return CausalLM(LlamaModel(cfg))


def unet_full() -> nn.Module:
    return UNetStage(width=128, groups=32)  # a diffusion UNet's first stage at 128 / 256 channels, GroupNorm(32)


def _text_full(vocab: int, seq: int = 128) -> tuple[Input, ...]:
    return (Input("input_ids", (1, seq), (1, seq), (), "ids", vocab),
            Input("attention_mask", (1, seq), (1, seq), (), "mask"))


FULL_NETWORKS: tuple[Network, ...] = (
    Network("resnet50", resnet50_full, _image(224), "torchvision ResNet-50, 224x224"),
    Network("convnext_tiny", convnext_tiny_full, _image(224), "torchvision ConvNeXt-T, 224x224"),
    Network("vit_b16", vit_b16_full, _image(224, spatial=False), "torchvision ViT-B/16, 224x224"),
    Network("swin_t", swin_t_full, _image(224), "torchvision Swin-T, 224x224"),
    Network("bert_base", bert_base_full, _text_full(30522), "transformers BertModel, bert-base configuration, "
            "128 tokens"),
    Network("gpt2_small", gpt2_full, _text_full(50257), "transformers GPT2Model, GPT-2 small configuration, "
            "128 tokens -> last hidden state"),
    Network("llama_135m", llama_full, _text_full(49152), "transformers LlamaModel, SmolLM-135M configuration, "
            "128 tokens -> last hidden state"),
    Network("unet_stage_full", unet_full, _image(64), "the UNet stage above at 128 / 256 channels, GroupNorm(32), "
            "64x64"),
)


# ----------------------------------------------------------------------------------------------------
# conversion, data, inference


def make_inputs(net: Network, dynamic: bool, ports) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(_seed(net.name) + (7 if dynamic else 3))
    out: dict[str, np.ndarray] = {}
    for inp, port in zip(net.inputs, ports, strict=True):
        shape = inp.dynamic if dynamic else inp.static
        dtype = port.get_element_type().to_dtype()
        if inp.kind == "ids":
            value = rng.integers(1, inp.high, size=shape)
        elif inp.kind == "mask":
            value = np.ones(shape)
            for row in range(1, shape[0]):  # trailing padding in every row but the first
                value[row, shape[1] - 2 * row:] = 0
        elif inp.kind == "audio":
            t = np.arange(shape[-1]) / 16000.0
            value = 0.5 * np.sin(2 * np.pi * 440.0 * t) + 0.1 * rng.standard_normal(shape)
        else:
            value = rng.standard_normal(shape)
        out[port.get_any_name()] = value.astype(dtype)
    return out


def convert(net: Network, dynamic: bool) -> ov.Model:
    torch.manual_seed(_seed(net.name))
    module = _randomize_norms(net.build(), _seed(net.name) + 1)
    example = []
    for inp in net.inputs:
        gen = torch.Generator().manual_seed(_seed(net.name) + 2)
        if inp.kind == "ids":
            example.append(torch.randint(1, inp.high, inp.static, generator=gen))
        elif inp.kind == "mask":
            # with padding: an all-ones example lets transformers trace a branch that drops the mask
            mask = torch.ones(inp.static, dtype=torch.int64)
            mask[..., -1] = 0
            example.append(mask)
        else:
            example.append(torch.randn(inp.static, generator=gen))
    shapes = [inp.partial_shape(dynamic) for inp in net.inputs]
    with torch.no_grad():
        model = ov.convert_model(module, example_input=tuple(example), input=shapes)
    model.set_friendly_name(f"{net.name}_{'dynamic' if dynamic else 'static'}")  # instead of Model<counter>
    for k, out in enumerate(model.outputs):
        if not out.get_names():
            out.get_tensor().set_names({f"output{k}"})
    return model




def layer_counts(xml: Path) -> Counter:
    return Counter(f"{t}-{v}" for t, v in LAYER.findall(xml.read_text(encoding="utf-8")))


def export(net: Network, out: Path, core: ov.Core, variants: tuple[bool, ...] = (False, True)) -> dict[str, Counter]:
    counts: dict[str, Counter] = {}
    for dynamic in variants:
        name = f"{net.name}_{'dynamic' if dynamic else 'static'}"
        model = convert(net, dynamic)
        xml = out / f"{name}.xml"
        ov.save_model(model, str(xml), compress_to_fp16=net.compress)
        reread = core.read_model(str(xml))
        inputs = make_inputs(net, dynamic, reread.inputs)
        expected = infer(core, reread, inputs)
        for k, v in expected.items():
            if not np.isfinite(v).all():
                raise RuntimeError(f"{name}: output {k} has non-finite values")
        np.savez(out / f"{name}.inputs.npz", **inputs)
        np.savez(out / f"{name}.expected.npz", **expected)
        again = infer(core, core.read_model(str(xml)), inputs)
        for k, v in expected.items():
            if not np.array_equal(again[k], v):
                raise RuntimeError(f"{name}: output {k} is not reproducible")
        counts[name] = layer_counts(xml)
        size = sum((out / f"{name}{ext}").stat().st_size for ext in (".xml", ".bin"))
        shapes = {k: v.shape for k, v in expected.items()}
        print(f"{name}: {size / 1024:.0f} KiB, {sum(counts[name].values())} layers, outputs {shapes}", flush=True)
    return counts


# ----------------------------------------------------------------------------------------------------
# README


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    return {p: md.version(p) for p in ("openvino", "torch", "torchvision", "timm", "transformers")}


def write_readme(out: Path) -> None:
    v = _versions()
    lines = [
        "# Real networks",
        "",
        "Small, randomly initialised networks of the families users run, converted from PyTorch by",
        f"`openvino.convert_model` and written by `openvino.save_model` (openvino {v['openvino']}, torch {v['torch']},",
        f"torchvision {v['torchvision']}, timm {v['timm']}, transformers {v['transformers']}).",
        "`tests/test_real_networks.py` runs each one in irnorm and compares with the stored OpenVINO outputs and,",
        "when openvino is installed, with a live OpenVINO run (dynamic variants also at the static variant's shape).",
        "",
        "* `NAME_static` has fixed input shapes; `NAME_dynamic` has a dynamic batch and, where the family allows,",
        "  a dynamic sequence length or dynamic spatial dims; its stored inputs have a different shape.",
        "* Weights: f16-compressed (`save_model`'s default) unless marked f32.",
        "* `NAME_<variant>.inputs.npz`: inputs keyed by `get_any_name()`, in model input order.",
        "* `NAME_<variant>.expected.npz`: outputs keyed by `get_any_name()`, in model output order, from OpenVINO's",
        "  CPU plugin (`INFERENCE_PRECISION_HINT=f32`, one thread) running the re-read file.",
        "",
        "Regenerate everything (needs the `export` extra: `pip install -e .[export]`; the tests need none of it):",
        "",
        f"    {COMMAND}",
        "",
    ]
    all_ops: Counter = Counter()
    for net in NETWORKS:
        files = [out / f"{net.name}_{s}.xml" for s in ("static", "dynamic")]
        if not all(f.is_file() for f in files):
            continue
        st, dy = (layer_counts(f) for f in files)
        for op in set(st) | set(dy):
            all_ops[op] += 1
        sizes = [sum(f.with_suffix(ext).stat().st_size for ext in (".xml", ".bin")) // 1024 for f in files]
        ins = ", ".join(f"`{i.name}` {list(i.static)} / {list(i.dynamic)}" for i in net.inputs)
        lines += [
            f"## {net.name}",
            "",
            f"{net.what}.",
            "",
            f"* weights: {'f16 (compressed)' if net.compress else 'f32'}; xml+bin: static {sizes[0]} KiB, "
            f"dynamic {sizes[1]} KiB",
            f"* inputs (static / dynamic data shape): {ins}",
            "",
            "| layer | static | dynamic |",
            "| --- | ---: | ---: |",
        ]
        for op in sorted(set(st) | set(dy)):
            lines.append(f"| {op} | {st.get(op, 0)} | {dy.get(op, 0)} |")
        lines.append("")
    lines += ["## All layer types", "", "| layer | networks using it |", "| --- | ---: |"]
    for op, n in sorted(all_ops.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"| {op} | {n} |")
    lines.append("")
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("tests/networks"))
    ap.add_argument("--only", nargs="*", help="export only these networks (the README covers all files present)")
    ap.add_argument("--full", action="store_true",
                    help="the full-size networks (FULL_NETWORKS, static variants only) instead of the test suite's; "
                         "--out defaults to .cache/networks_full and no README is written")
    args = ap.parse_args(argv)
    if args.full and args.out == Path("tests/networks"):
        args.out = Path(".cache/networks_full")
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    core = ov.Core()
    failed = []
    for net in FULL_NETWORKS if args.full else NETWORKS:
        if args.only and net.name not in args.only:
            continue
        try:
            export(net, args.out, core, (False,) if args.full else (False, True))
        except Exception as exc:  # report and go on: one family failing must not stop the others
            failed.append(net.name)
            print(f"{net.name}: FAILED: {type(exc).__name__}: {str(exc)[:2000]}", file=sys.stderr, flush=True)
    if not args.full:
        write_readme(args.out)
    total = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"total {total / 2**20:.1f} MiB in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
